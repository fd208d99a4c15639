// The phase table against our protos: each phase's member numbers in ProcessingRequest and
// ProcessingResponse, and the lookups by number.
import { describe, expect, it } from 'vitest';
import { messageType } from '../../src/protocol/codec.js';
import { PROCESSING_REQUEST_TYPE, PROCESSING_RESPONSE_TYPE } from '../../src/protocol/constants.js';
import { PHASE_BY_REQUEST_FIELD, PHASE_BY_RESPONSE_FIELD, PHASE_INDEX, PHASES } from '../../src/protocol/phases.js';

describe('PHASES', () => {
  it('numbers each phase as the protos do, in the order Envoy expects answers', () => {
    const req = messageType(PROCESSING_REQUEST_TYPE);
    const res = messageType(PROCESSING_RESPONSE_TYPE);
    expect(PHASES.map((p) => p.name)).toEqual(['request_headers', 'request_body', 'request_trailers', 'response_headers', 'response_body', 'response_trailers']);
    for (const p of PHASES) {
      expect(req.fields[p.name]!.id, p.name).toBe(p.requestField);
      expect(res.fields[p.name]!.id, p.name).toBe(p.responseField);
      expect(p.direction).toBe(p.name.split('_')[0]);
      expect(p.kind).toBe(p.name.split('_')[1]);
      expect(PHASE_INDEX[p.name]).toBe(p.index);
      expect(PHASES[p.index]).toBe(p);
      expect(PHASE_BY_REQUEST_FIELD[p.requestField]).toBe(p);
      expect(PHASE_BY_RESPONSE_FIELD[p.responseField]).toBe(p);
    }
    expect(PHASE_BY_REQUEST_FIELD[1]).toBeUndefined();
    expect(PHASE_BY_RESPONSE_FIELD[7]).toBeUndefined();
    expect(PHASE_BY_RESPONSE_FIELD[99]).toBeUndefined();
  });
});
