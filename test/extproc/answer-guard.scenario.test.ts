// Hostile EPP answers over real sockets: Envoy stand-in -> router -> a hostile EPP (pool-a)
// and a simulated GIE EPP (pool-b). What the member's rules refuse never reaches Envoy.
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { headerOption } from '../../src/protocol/responses.js';
import { toStruct } from '../../src/protocol/struct.js';
import { DEST, hostileFixture, routeTo } from './hostile-scenario.js';
import { getHeader } from '../harness/envoy-standin.js';
import { jsonBody, POOL_B_ENDPOINTS } from './scenario.js';

const f = hostileFixture();
const start = f.start;

const req = (authority: string) => ({
  authority,
  path: '/v1/completions',
  headers: { authorization: 'Bearer client-token', 'x-request-id': 'rid-1' },
  body: jsonBody(512),
});

describe('a hostile EPP', () => {
  it('destination 169.254.169.254:80 is refused, counted and failed over, never relayed', async () => {
    await start({ answer: () => routeTo('169.254.169.254:80') });
    const results = await Promise.all(Array.from({ length: 6 }, () => f.sc!.envoy.run(req('split.example'))));
    for (const r of results) {
      expect(r.status).toBe(200);
      expect(r.destination).toBe(POOL_B_ENDPOINTS[0]);
      expect(JSON.stringify(r.messages)).not.toContain('169.254.169.254');
    }
    expect(f.hostile!.streams).toBeGreaterThan(0);
    const refused = f.sc!.observer.failovers.filter((f) => f.reason === 'refused');
    expect(refused.length).toBe(f.hostile!.streams);
    expect(f.sc!.observer.guarded).toContainEqual({ cluster: 'cluster-a', reason: 'destination_denied' });
  });

  it('with no other pool the client gets a 503 naming the refusal (FailClose)', async () => {
    await start({ answer: () => routeTo('127.0.0.1:22') });
    const r = await f.sc!.envoy.run(req('local.example'));
    expect(r.status).toBe(503);
    const e = JSON.parse(r.response.body.toString()).error;
    expect(e.attempts[0].reason).toBe('refused');
    expect(e.message).toContain('127.0.0.1:22 is inside destinations.deny');
  });

  it('a denied destination hidden in a first HeaderValueOption.header occurrence (Envoy merges both) is refused', async () => {
    // header {key: DEST, raw_value: 169.254.169.254:80} + header {key: DEST, value: pool-b-like}: a C++ parser
    // merges the two and routes by the raw_value; a last-occurrence reader sees only the second.
    const w = () => protobuf.Writer.create();
    const hv = (no: number, v: string) => w().uint32((1 << 3) | 2).string(DEST).uint32((no << 3) | 2).string(v).finish();
    const option = w().uint32((1 << 3) | 2).bytes(hv(3, '169.254.169.254:80')).uint32((1 << 3) | 2).bytes(hv(2, '10.0.0.1:8000')).finish();
    const mutation = w().uint32((1 << 3) | 2).bytes(option).finish();
    const common = w().uint32((2 << 3) | 2).bytes(mutation).finish();
    const answer = Buffer.from(w().uint32((1 << 3) | 2).bytes(w().uint32((1 << 3) | 2).bytes(common).finish()).finish());
    await start({ answer: () => answer });
    const r = await f.sc!.envoy.run(req('local.example'));
    expect(r.status).toBe(503);
    const e = JSON.parse(r.response.body.toString()).error;
    expect(e.attempts[0].reason).toBe('refused');
    expect(e.message).toContain('169.254.169.254:80 is inside destinations.deny');
    expect(f.sc!.observer.guarded).toContainEqual({ cluster: 'cluster-a', reason: 'destination_denied' });
  });

  it('a denied list in a first HeaderValueOption.header occurrence that a later one overwrites never reaches envoy.lb', async () => {
    // header {key: DEST, raw_value: <denied list>} + header {key: DEST, raw_value: 10.1.0.7:8000}: Envoy merges the
    // two into the allowed value the rules check; the router must not cut the overwritten list into the metadata.
    const w = () => protobuf.Writer.create();
    const hv = (v: string) => w().uint32((1 << 3) | 2).string(DEST).uint32((3 << 3) | 2).string(v).finish();
    const option = w().uint32((1 << 3) | 2).bytes(hv('169.254.169.254:80,127.0.0.1:22')).uint32((1 << 3) | 2).bytes(hv('10.1.0.7:8000')).finish();
    const mutation = w().uint32((1 << 3) | 2).bytes(option).finish();
    const common = w().uint32((2 << 3) | 2).bytes(mutation).finish();
    const answer = Buffer.from(w().uint32((1 << 3) | 2).bytes(w().uint32((1 << 3) | 2).bytes(common).finish()).finish());
    await start({ answer: () => answer });
    const r = await f.sc!.envoy.run(req('local.example'));
    expect(r.status).toBe(200);
    expect(r.destination).toBe('10.1.0.7:8000');
    expect(JSON.stringify(r.dynamicMetadata)).not.toContain('169.254.169.254');
  });

  it('a destination that is not ip:port is refused', async () => {
    await start({ answer: () => routeTo('metadata.google.internal:80') });
    const r = await f.sc!.envoy.run(req('local.example'));
    expect(r.status).toBe(503);
    expect(f.sc!.observer.guarded).toContainEqual({ cluster: 'cluster-a', reason: 'destination_invalid' });
  });

  it('a member allowed loopback explicitly may route there', async () => {
    await start({ answer: () => routeTo('127.0.0.1:8000') }, { clusterA: { eppAnswers: { destinations: { allow: ['127.0.0.0/8'], deny: [] } } } });
    const r = await f.sc!.envoy.run(req('local.example'));
    expect(r.status).toBe(200);
    expect(r.destination).toBe('127.0.0.1:8000');
  });

  it('overwriting authorization, removing x-request-id and metadata outside envoy.lb are dropped; the rest is relayed', async () => {
    await start({
      answer: () => ({
        request_headers: {
          response: {
            clear_route_cache: true,
            header_mutation: {
              set_headers: [headerOption(DEST, '10.1.0.7:8000'), headerOption('authorization', 'Bearer stolen'), headerOption('x-prefiller-host-port', '10.1.0.8:8000')],
              remove_headers: ['x-request-id'],
            },
          },
        },
        dynamic_metadata: toStruct({ 'envoy.lb': { [DEST]: '10.1.0.7:8000' }, 'envoy.filters.http.rbac': { shadow: 'allow' } }),
      }),
      responseHeaders: () => ({ response_headers: { response: { header_mutation: { set_headers: [headerOption('set-cookie', 'session=evil')] } } } }),
    });
    const r = await f.sc!.envoy.run(req('local.example'), { receivingNamespaces: ['envoy.lb', 'envoy.filters.http.rbac'] });
    expect(r.status).toBe(200);
    expect(r.destination).toBe('10.1.0.7:8000');
    expect(getHeader(r.upstreamHeaders!, 'authorization')).toBe('Bearer client-token');
    expect(getHeader(r.upstreamHeaders!, 'x-request-id')).toBe('rid-1');
    expect(getHeader(r.upstreamHeaders!, 'x-prefiller-host-port')).toBe('10.1.0.8:8000');
    expect(Object.keys(r.dynamicMetadata)).toEqual(['envoy.lb']);
    expect(getHeader(r.response.headers, 'set-cookie')).toBeUndefined();
    expect(f.sc!.observer.guarded.map((g) => g.reason).sort()).toEqual(['header_not_allowed', 'header_not_allowed', 'header_not_allowed', 'metadata_namespace']);
  });

  it('an immediate 302 keeps its status but loses location and set-cookie', async () => {
    await start({
      answer: () => ({
        immediate_response: {
          status: { code: 302 },
          headers: { set_headers: [headerOption('location', 'https://phish.example/'), headerOption('set-cookie', 'session=evil'), headerOption('content-type', 'text/plain')] },
          body: Buffer.from('moved'),
        },
      }),
    });
    const r = await f.sc!.envoy.run(req('local.example'));
    expect(r.status).toBe(302);
    expect(getHeader(r.response.headers, 'location')).toBeUndefined();
    expect(getHeader(r.response.headers, 'set-cookie')).toBeUndefined();
    expect(getHeader(r.response.headers, 'content-type')).toBe('text/plain');
    expect(r.response.body.toString()).toBe('moved');
  });

  it('the FailOpen cache keeps only validated destinations', async () => {
    let answer = routeTo('10.1.0.9:8000');
    await start({ answer: () => answer }, { failureModeA: 'FailOpen' });
    expect((await f.sc!.envoy.run(req('local.example'))).destination).toBe('10.1.0.9:8000');
    answer = routeTo('169.254.169.254:80');
    for (let i = 0; i < 3; i++) {
      const r = await f.sc!.envoy.run(req('local.example'));
      expect(r.status).toBe(200);
      expect(r.destination).toBe('10.1.0.9:8000'); // failed open to the validated one
    }
    await f.sc!.settled();
    expect(f.sc!.observer.outcomes().filter((o) => o === 'fail_open')).toHaveLength(3);
  });
});

describe('a mode_override in an EPP answer', () => {
  it('to FULL_DUPLEX_STREAMED is dropped and counted; the rest of the answer reaches Envoy', async () => {
    await start({ answer: () => ({ ...routeTo('10.1.0.7:8000'), mode_override: { response_body_mode: 4 } }) });
    const r = await f.sc!.envoy.run(req('local.example'), { requestBodyMode: 'STREAMED', responseBodyMode: 'STREAMED', messageTimeoutMs: 5000 });
    expect(r.status).toBe(200);
    expect(r.destination).toBe('10.1.0.7:8000');
    const answers = r.messages.filter((m) => m.dir === 'in' && m.type === 'request_headers');
    expect(answers).toHaveLength(1);
    expect(JSON.stringify(answers[0]!.message)).not.toContain('mode_override');
    expect(f.sc!.observer.guarded).toEqual([{ cluster: 'cluster-a', reason: 'mode_override' }]);
  });

  it('to other modes is relayed as sent', async () => {
    await start({ answer: () => ({ ...routeTo('10.1.0.7:8000'), mode_override: { response_body_mode: 2 } }) });
    const r = await f.sc!.envoy.run(req('local.example'), { requestBodyMode: 'STREAMED', responseBodyMode: 'STREAMED', messageTimeoutMs: 5000 });
    expect(r.status).toBe(200);
    const answer = r.messages.find((m) => m.dir === 'in' && m.type === 'request_headers')!;
    expect(JSON.stringify(answer.message)).toContain('mode_override');
    expect(f.sc!.observer.guarded).toEqual([]);
  });
});
