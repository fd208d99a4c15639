import { describe, expect, it } from 'vitest';
import { ErrorCode, RouterError } from '../../src/extproc/errors.js';

describe('RouterError', () => {
  it('maps codes to HTTP status, gRPC status and outcome', () => {
    const e = new RouterError(ErrorCode.NoRoute, 'nope');
    expect([e.userFacing, e.httpStatus, e.outcome]).toEqual([true, 404, 'no_route']);
    expect(e.responseBody()).toEqual({ error: { type: 'no_route', message: 'nope' } });
    const i = RouterError.from(new TypeError('bug'));
    expect([i.code, i.userFacing, i.outcome]).toEqual([ErrorCode.Internal, false, 'internal_error']);
    expect(i.cause).toBeInstanceOf(TypeError);
    expect(RouterError.from(e)).toBe(e);
    const w = e.withContext('request_headers');
    expect([w.code, w.message]).toEqual([ErrorCode.NoRoute, 'request_headers: nope']);
  });
});
