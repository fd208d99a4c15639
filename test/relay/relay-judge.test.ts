import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { routerConfigSchema } from '../../src/config/schema.js';
import { decodeResponse } from '../../src/protocol/codec.js';
import type { ProcessingResponse } from '../../src/protocol/messages.js';
import { packageDefinition } from '../harness/protos.js';
import { RELAY_REFUSALS, relayForwardAnswer, relayRefusalAnswer } from '../../src/relay/relay-judge.js';

const BASE = { clusterName: 'a', gateways: [{ namespace: 'n', name: 'g' }], clusters: [{ name: 'a', manifests: { paths: ['x'] } }] };

/** Reads an answer as Envoy does: a repeated message field merges into the first (the token's removal is appended). */
const asEnvoy = (b: Buffer): ProcessingResponse =>
  (packageDefinition['envoy.service.ext_proc.v3.ExternalProcessor'] as unknown as Record<string, { responseDeserialize: (b: Buffer) => ProcessingResponse }>).Process!.responseDeserialize(b);

describe('relay answers', () => {
  it('a forward sets the destination (and the parent mark for a parent), removes the token and any kind the request came with', () => {
    const endpoint = asEnvoy(relayForwardAnswer({ target: '10.0.0.1:8000', kind: 'endpoint', cluster: 'b' })).request_headers!.response!;
    expect(endpoint.clear_route_cache).toBe(true);
    const set = (r: typeof endpoint) => r.header_mutation!.set_headers.map((h) => [h.header!.key, String(h.header!.raw_value), Boolean(h.append?.value)]);
    expect(set(endpoint)).toEqual([['x-gateway-destination-endpoint', '10.0.0.1:8000', false]]);
    expect(endpoint.header_mutation!.remove_headers).toEqual(['x-mcip-relay-token', 'x-mcip-destination-kind']);
    const parent = asEnvoy(relayForwardAnswer({ target: '10.0.0.2:443', kind: 'parent', cluster: 'b' })).request_headers!.response!;
    expect(set(parent)).toEqual([['x-gateway-destination-endpoint', '10.0.0.2:443', false], ['x-mcip-destination-kind', 'parent', false]]);
  });

  it('a refusal is an immediate 403 whose body names the reason', () => {
    const r = decodeResponse(relayRefusalAnswer('replayed', 'the relay token was used before')).immediate_response!;
    expect(r.status!.code).toBe(403);
    expect(JSON.parse(String(r.body))).toEqual({ error: { type: 'relay_refused', reason: 'replayed', message: 'the relay token was used before' } });
  });

  it('the README names exactly the refusal reasons the metric can carry', () => {
    const row = readFileSync('README.md', 'utf8').split('\n').find((l) => l.startsWith('| `mcip_relay_refusals_total`'))!;
    expect([...row.split('|')[3]!.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]).sort()).toEqual([...RELAY_REFUSALS].sort());
  });
});

describe('relay config', () => {
  it('listen.relay needs endpointPicker.relay; the defaults come from the schema', () => {
    const bad = routerConfigSchema.safeParse({ ...BASE, listen: { relay: '127.0.0.1:9005' } });
    expect(bad.success).toBe(false);
    expect(bad.error!.issues.map((i) => `${i.path.join('.')}: ${i.message}`)).toEqual([expect.stringMatching(/^listen\.relay: the relay verifier \(listen\.relay\) needs endpointPicker\.relay/)]);
    const ok = routerConfigSchema.parse({ ...BASE, listen: { relay: '127.0.0.1:9005' }, endpointPicker: { relay: { keyFile: '/k' } } });
    expect(ok.endpointPicker!.relay).toEqual({ port: 8443, keyFile: '/k', tokenTtlMs: 10_000, maxSkewMs: 2_000, maxNonces: 100_000 });
  });
});
