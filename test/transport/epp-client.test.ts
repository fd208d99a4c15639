import { Metadata } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { forwardedHeaders } from '../../src/extproc/epp-call.js';
import { EppClientPool, targetKey } from '../../src/transport/epp-client.js';
import { ErrorCode, RouterError } from '../../src/extproc/errors.js';
import { overrideTarget as target } from '../helpers/epp-target.js';
import { blackHole } from '../extproc/scenario.js';
import { withinProcessMs } from '../helpers/work-time.js';

describe('forwardedHeaders', () => {
  it("keeps Envoy's custom metadata from a grpc-js call, drops transport and gRPC-reserved keys", () => {
    const md = new Metadata();
    md.set('x-route-tag', 'a');
    md.add('x-multi', '1');
    md.add('x-multi', '2');
    md.set('x-bin-bin', Buffer.from([1, 2]));
    md.set('user-agent', 'envoy');
    md.set('content-type', 'application/grpc');
    md.set('grpc-timeout', '1S');
    md.set('te', 'trailers');
    const out = forwardedHeaders(md.toHttp2Headers());
    expect(Object.keys(out).sort()).toEqual(['x-bin-bin', 'x-multi', 'x-route-tag']);
    // What a grpc-js EPP call carries: the same metadata back.
    const back = Metadata.fromHttp2Headers(out as Record<string, string[]>);
    expect(back.get('x-multi')).toEqual(['1', '2']);
    expect(back.get('x-bin-bin')).toEqual([Buffer.from([1, 2])]);
  });

  it('keeps custom headers of an HTTP/2 request as received, without pseudo-headers', () => {
    const out = forwardedHeaders({
      ':method': 'POST',
      ':path': '/envoy.service.ext_proc.v3.ExternalProcessor/Process',
      ':authority': 'router',
      ':scheme': 'http',
      'content-type': 'application/grpc',
      te: 'trailers',
      'grpc-accept-encoding': 'identity',
      'x-route-tag': 'blue',
      'x-trace-bin': 'AQI=',
      'set-cookie': ['a=1', 'b=2'],
    });
    expect(out).toEqual({ 'x-route-tag': 'blue', 'x-trace-bin': 'AQI=', 'set-cookie': ['a=1', 'b=2'] });
  });

  it('sends a repeated binary key as one header field per value, as it came from Envoy (node:http2 joins them with ", ")', () => {
    // A peer that decodes a -bin field as one base64 value (grpc-go) would refuse "AQI=, AwQ=".
    const out = forwardedHeaders({ ':path': '/p', 'x-trace-bin': 'AQI=, AwQ=', 'x-tag': 'a, b' });
    expect(out).toEqual({ 'x-trace-bin': ['AQI=', 'AwQ='], 'x-tag': 'a, b' });
    const md = Metadata.fromHttp2Headers(out as Record<string, string[]>);
    expect(md.get('x-trace-bin')).toEqual([Buffer.from([1, 2]), Buffer.from([3, 4])]);
  });
});

describe('targetKey', () => {
  it('separates the same address with different TLS settings', () => {
    const keys = new Set([
      targetKey(target('10.0.0.1:9002')),
      targetKey(target('10.0.0.1:9002', { enabled: true })),
      targetKey(target('10.0.0.1:9002', { enabled: true, caFile: '/ca.pem' })),
      targetKey(target('10.0.0.1:9002', { enabled: true, insecureSkipVerify: false })),
      targetKey(target('10.0.0.1:9002', { enabled: true, serverName: 'epp' })),
    ]);
    expect(keys.size).toBe(5);
    expect(targetKey(target('10.0.0.1:9002'))).toBe(targetKey(target('10.0.0.1:9002', { serverName: 'ignored-without-tls' })));
  });
});

describe('EppClientPool', () => {
  it('shares a channel per target and evicts targets no longer in the snapshot', async () => {
    const pool = new EppClientPool({ maxMessageBytes: 1 << 20, connectTimeoutMs: 50 });
    const a = target('127.0.0.1:1');
    const b = target('127.0.0.1:2');
    // Nothing listens on ports 1 and 2: ready() resolves (the call would fail at once) or times out.
    await Promise.allSettled([pool.ready(a), pool.ready({ ...a }), pool.ready(b)]);
    expect(pool.size()).toBe(2);
    const call = pool.call(a, {});
    const status = await new Promise<number>((resolve) => call.on('error', (e: { code: number }) => resolve(e.code)));
    expect(status).toBe(14); // UNAVAILABLE, with grpc-js's reason
    pool.retain([b]);
    expect(pool.size()).toBe(1);
    pool.close();
    expect(pool.size()).toBe(0);
    await expect(pool.ready(b)).rejects.toThrow('EPP client pool is closed');
  });

  it('fails ready() and call() of a target whose TLS files cannot be read, naming the file', async () => {
    const pool = new EppClientPool({ maxMessageBytes: 1 << 20, connectTimeoutMs: 50 });
    try {
      const t = target('127.0.0.1:1', { enabled: true, insecureSkipVerify: false, caFile: '/missing-ca.pem' });
      await expect(pool.ready(t)).rejects.toThrow(/EPP TLS: cannot read caFile \/missing-ca.pem/);
      expect(() => pool.call(t, {})).toThrow(/EPP TLS: cannot read caFile \/missing-ca.pem/);
    } finally {
      pool.close();
    }
  });

  it('gives a cold channel at most connectTimeoutMs', async () => {
    const hole = await blackHole();
    const pool = new EppClientPool({ maxMessageBytes: 1 << 20, connectTimeoutMs: 150 });
    try {
      await withinProcessMs(1000, 'cold channel', () => expect(pool.ready(target(hole.address, { enabled: true }))).rejects.toThrow(/within 150 ms/));
    } finally {
      pool.close();
      hole.close();
    }
  });
});

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
