import { describe, expect, it } from 'vitest';
import { withRouterDecision } from '../../src/protocol/router-metadata.js';
import { fromStruct, packageDefinition } from '../harness/protos.js';

// The harness's own codec (proto-loader), independent of src/protocol.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const Process = (packageDefinition['envoy.service.ext_proc.v3.ExternalProcessor'] as any).Process;
const encode = (m: object): Buffer => Process.responseSerialize(m);
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const decode = (b: Buffer): any => Process.responseDeserialize(b);

const lb = (v: string) => ({ fields: { 'envoy.lb': { structValue: { fields: { 'x-gateway-destination-endpoint': { stringValue: v } } } } } });

describe('withRouterDecision', () => {
  it('adds the mcip.router namespace; the answer itself is unchanged', () => {
    const answer = encode({ request_headers: { response: { clear_route_cache: true } } });
    const out = decode(withRouterDecision(answer, { cluster: 'west', pool: 'ns/pool', route: 'ns/route', mode: 'Endpoint', attempts: 2, outcome: 'failed_over' }));
    expect(out.request_headers.response.clear_route_cache).toBe(true);
    expect(fromStruct(out.dynamic_metadata)).toEqual({
      'mcip.router': { cluster: 'west', pool: 'ns/pool', route: 'ns/route', mode: 'Endpoint', attempts: 2, outcome: 'failed_over' },
    });
  });

  it("keeps the answer's own namespaces beside it, also when dynamic_metadata comes in several fields (Envoy merges them)", () => {
    const one = encode({ request_headers: {}, dynamic_metadata: lb('10.0.0.1:8000') });
    const split = Buffer.concat([encode({ dynamic_metadata: { fields: { other: { stringValue: 'x' } } } }), one]);
    for (const answer of [one, split]) {
      const md = fromStruct(decode(withRouterDecision(answer, { attempts: 0, outcome: 'no_route' })).dynamic_metadata);
      expect(md['mcip.router']).toEqual({ attempts: 0, outcome: 'no_route' });
      expect((md['envoy.lb'] as Record<string, unknown>)['x-gateway-destination-endpoint']).toBe('10.0.0.1:8000');
    }
  });

  it('the router\'s entry comes last: a mcip.router entry already in the answer does not win', () => {
    const answer = encode({ request_headers: {}, dynamic_metadata: { fields: { 'mcip.router': { structValue: { fields: { cluster: { stringValue: 'forged' } } } } } } });
    const md = fromStruct(decode(withRouterDecision(answer, { cluster: 'real', attempts: 1, outcome: 'routed' })).dynamic_metadata);
    expect(md['mcip.router']).toEqual({ cluster: 'real', attempts: 1, outcome: 'routed' });
  });
});
