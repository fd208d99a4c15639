// How the Endpoint Picker role answers Envoy's request headers, on the wire: header and
// envoy.lb equal, never x-mcip-destination-kind, a relay token for relay pools naming the
// real destination and its kind, a client's token removed otherwise.
import { describe, expect, it } from 'vitest';
import { RelaySigner, RelayVerifier } from '../../src/credentials/relay-token.js';
import { pickerShaper } from '../../src/extproc/picker-answers.js';
import { encodeResponse } from '../../src/protocol/codec.js';
import { continueHeaders, destinationHeadersResponse, headerOption, parentHeadersResponse } from '../../src/protocol/responses.js';
import { fromStruct, packageDefinition, type PbProcessingResponse } from '../harness/protos.js';

/** Envoy's reading of an answer (repeated message fields merge), as the harness decodes it. */
const process = (packageDefinition['envoy.service.ext_proc.v3.ExternalProcessor'] as unknown as Record<string, { responseDeserialize: (b: Buffer) => PbProcessingResponse }>).Process!;

const KEY = Buffer.alloc(32, 3);
const keys = () => ({ keys: [KEY] });
const relay = { address: '10.0.0.9:8443', signer: new RelaySigner(keys, 10_000), now: () => 1_000_000 };

/** What Envoy makes of an answer: the last set of each header (append false overwrites), the removed ones, and envoy.lb. */
function envoyView(msg: Buffer): { set: Record<string, string>; removed: string[]; lb: unknown } {
  const r = process.responseDeserialize(msg);
  const mutation = r.request_headers?.response?.header_mutation;
  const set: Record<string, string> = {};
  for (const o of mutation?.set_headers ?? []) set[o.header!.key ?? ''] = Buffer.from(o.header!.raw_value ?? []).toString() || (o.header!.value ?? '');
  const md = r.dynamic_metadata ? (fromStruct(r.dynamic_metadata) as Record<string, Record<string, unknown>>) : {};
  return { set, removed: mutation?.remove_headers ?? [], lb: md['envoy.lb']?.['x-gateway-destination-endpoint'] };
}

describe('answers of the Endpoint Picker role', () => {
  it('direct: the EPP pick (the primary of a list) in header and envoy.lb, the EPP\'s other headers kept, a client token removed', () => {
    const epp = encodeResponse({ request_headers: { response: { header_mutation: { set_headers: [headerOption('x-gateway-destination-endpoint', '10.1.0.3:8000,10.1.0.4:8000'), headerOption('x-decoder-host-port', '10.1.0.3:8200')] } } } });
    const v = envoyView(pickerShaper('direct', {}, () => 'cluster-a')(epp, '10.1.0.3:8000,10.1.0.4:8000', true));
    expect(v.set).toEqual({ 'x-gateway-destination-endpoint': '10.1.0.3:8000', 'x-decoder-host-port': '10.1.0.3:8200' });
    expect(v.lb).toBe('10.1.0.3:8000');
    expect(v.removed).toEqual(['x-mcip-relay-token']);
  });

  it('direct, Parent mode: the remote gateway without x-mcip-destination-kind (other gateways have no TLS parent cluster)', () => {
    const v = envoyView(pickerShaper('direct', {}, () => 'cluster-b')(parentHeadersResponse('192.0.2.10:443'), undefined, false));
    expect(v.set).toEqual({ 'x-gateway-destination-endpoint': '192.0.2.10:443' });
    expect(v.lb).toBe('192.0.2.10:443');
  });

  it('relay: this pod in header and envoy.lb, the token naming destination, kind and member cluster', () => {
    const verifier = new RelayVerifier({ keys, ttlMs: 10_000, maxSkewMs: 2000, maxNonces: 10 });
    const parent = envoyView(pickerShaper('relay', relay, () => 'cluster-b')(parentHeadersResponse('192.0.2.10:443'), undefined, false));
    expect(parent.set['x-gateway-destination-endpoint']).toBe('10.0.0.9:8443');
    expect(parent.lb).toBe('10.0.0.9:8443');
    expect(parent.set['x-mcip-destination-kind']).toBeUndefined();
    expect(verifier.verify(parent.set['x-mcip-relay-token'], 1_000_000)).toMatchObject({ ok: true, claim: { target: '192.0.2.10:443', kind: 'parent', cluster: 'cluster-b' } });
    const failOpen = envoyView(pickerShaper('relay', relay, () => 'cluster-a')(destinationHeadersResponse('request_headers', '10.1.0.99:8000'), undefined, false));
    expect(verifier.verify(failOpen.set['x-mcip-relay-token'], 1_000_000)).toMatchObject({ ok: true, claim: { target: '10.1.0.99:8000', kind: 'endpoint', cluster: 'cluster-a' } });
    expect(failOpen.removed).toEqual([]);
  });

  it('an answer without a destination (the router continuing) removes a client-supplied destination and token, and sets nothing', () => {
    const v = envoyView(pickerShaper('relay', relay, () => 'cluster-a')(continueHeaders('request_headers'), undefined, false));
    expect(v).toEqual({ set: {}, removed: ['x-gateway-destination-endpoint', 'x-mcip-relay-token'], lb: undefined });
  });
});
