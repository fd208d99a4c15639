// The simulated EPP's stock llm-d behaviour: Health only on its own port, leader election,
// llm_d_epp_* metrics only, a token-protected /metrics; the ext_proc port still picks.
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { parsePromText } from '../../src/signals/prom-text.js';
import { runRequest } from './envoy-standin.js';
import { ExternalProcessorClient, HealthClient, type PbProcessingRequest, type PbProcessingResponse } from './protos.js';
import { startSimulatedEpp, STOCK_HEALTH_SERVICES, type SimulatedEpp, type SimulatedEppOptions } from './simulated-epp.js';

const EXT_PROC = 'envoy.service.ext_proc.v3.ExternalProcessor';
const running: SimulatedEpp[] = [];
afterEach(async () => {
  for (const e of running.splice(0)) await e.stop();
});

async function epp(o: Partial<SimulatedEppOptions> = {}): Promise<SimulatedEpp> {
  const e = await startSimulatedEpp({ endpoints: ['10.0.0.1:8000', '10.0.0.2:8000'], ...o });
  running.push(e);
  return e;
}

type Answer = { status?: number } | { code: number };
function check(address: string, service: string): Promise<Answer> {
  const c = new HealthClient(address, grpc.credentials.createInsecure()) as unknown as {
    Check(req: { service: string }, cb: (err: grpc.ServiceError | null, res: { status?: number }) => void): void;
    close(): void;
  };
  return new Promise((resolve) =>
    c.Check({ service }, (err, res) => {
      c.close();
      resolve(err ? { code: err.code } : res);
    }),
  );
}

async function statuses(address: string): Promise<Record<string, Answer>> {
  const out: Record<string, Answer> = {};
  for (const s of [...STOCK_HEALTH_SERVICES, 'inference-extension']) out[s] = await check(address, s);
  return out;
}

const SERVING = { status: 1 };
const NOT_SERVING = { status: 2 };

async function scrape(e: SimulatedEpp, token?: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`${e.metricsOrigin}/metrics`, token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, text: await res.text() };
}

describe('simulated EPP, stock llm-d behaviour', () => {
  it('the ext_proc port has no Health service (UNIMPLEMENTED) and still picks', async () => {
    const e = await epp({ stock: true });
    expect(await check(e.address, EXT_PROC)).toEqual({ code: grpc.status.UNIMPLEMENTED });
    expect(await check(e.address, '')).toEqual({ code: grpc.status.UNIMPLEMENTED });
    expect(await runRequest(e.address, { authority: 'a', path: '/v1/completions', body: '{"model":"m"}' })).toMatchObject({ outcome: 'forwarded' });
  });

  it.each([
    ['BUFFERED', { request_body_mode: 2, response_body_mode: 2 }],
    ['no mode announced', undefined],
  ])('answers as in full duplex whatever the stream announces (%s): headers after the body, the body echoed as streamed_response', async (_what, protocol) => {
    const stock = await epp({ stock: true });
    const plain = await epp();
    const answers = async (e: SimulatedEpp): Promise<PbProcessingResponse[]> => {
      const client = new ExternalProcessorClient(e.address, grpc.credentials.createInsecure());
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      const call = (client as any).Process() as grpc.ClientDuplexStream<PbProcessingRequest, PbProcessingResponse>;
      const got: PbProcessingResponse[] = [];
      call.on('data', (m: PbProcessingResponse) => got.push(m));
      const ended = new Promise((r) => call.on('status', r));
      call.on('error', () => undefined);
      call.write({ request_headers: { headers: { headers: [{ key: ':path', raw_value: Buffer.from('/v1/completions') }] } }, ...(protocol ? { protocol_config: protocol } : {}) });
      call.write({ request_body: { body: Buffer.from('{"model":"m"}'), end_of_stream: true } });
      call.end();
      await ended;
      client.close();
      return got;
    };
    const s = await answers(stock);
    expect(s.map((m) => m.response)).toEqual(['request_headers', 'request_body']);
    expect(s[1]!.request_body?.response?.body_mutation?.streamed_response?.end_of_stream).toBe(true);
    if (protocol) expect((await answers(plain))[1]!.request_body?.response?.body_mutation?.streamed_response).toBeFalsy();
  });

  it('a separate health port answers the four names; unknown names NOT_FOUND; leader election gates all but liveness', async () => {
    const e = await epp({ stock: { leader: false } });
    expect(e.healthAddress).not.toBe(e.address);
    const notFound = { code: grpc.status.NOT_FOUND };
    expect(await statuses(e.healthAddress)).toEqual({ liveness: SERVING, readiness: NOT_SERVING, '': NOT_SERVING, [EXT_PROC]: NOT_SERVING, 'inference-extension': notFound });
    e.setLeader(true);
    expect(await statuses(e.healthAddress)).toEqual({ liveness: SERVING, readiness: SERVING, '': SERVING, [EXT_PROC]: SERVING, 'inference-extension': notFound });
    e.setLeader(false);
    expect(await check(e.healthAddress, 'readiness')).toEqual(NOT_SERVING);
  });

  it('exports pool metrics under llm_d_epp_* only (the deprecated names on request), labelled with the pool', async () => {
    const e = await epp({ stock: { pool: 'pool-x', metrics: { queueSize: 7 } } });
    const names = (text: string) => {
      const r = parsePromText(text);
      if (!r.ok) throw new Error(r.message);
      return r.samples.map((s) => `${s.name}{name=${s.labels.name}} ${s.value}`);
    };
    expect(names((await scrape(e)).text)).toEqual([
      'llm_d_epp_ready_endpoints{name=pool-x} 2',
      'llm_d_epp_average_queue_size{name=pool-x} 7',
      'llm_d_epp_average_kv_cache_utilization{name=pool-x} 0',
      'llm_d_epp_average_running_requests{name=pool-x} 0',
    ]);
    e.setEndpoints(['10.0.0.1:8000']);
    e.setPoolMetrics({ kvCache: 0.5 });
    expect(names((await scrape(e)).text)).toContain('llm_d_epp_ready_endpoints{name=pool-x} 1');
    expect(names((await scrape(e)).text)).toContain('llm_d_epp_average_kv_cache_utilization{name=pool-x} 0.5');

    const both = await epp({ stock: { pool: 'pool-y', deprecatedMetrics: true } });
    const all = names((await scrape(both)).text);
    expect(all).toContain('llm_d_epp_ready_endpoints{name=pool-y} 2');
    expect(all).toContain('inference_pool_ready_pods{name=pool-y} 2');
  });

  it('/metrics with tokens: 401 without one, 403 for an unknown one, 200 for each accepted one', async () => {
    const e = await epp({ stock: { metricsTokens: ['tok-a', 'tok-b'] } });
    expect((await scrape(e)).status).toBe(401);
    expect((await scrape(e, 'nope')).status).toBe(403);
    expect(e.metricsUnauthorized).toBe(2);
    expect((await scrape(e, 'tok-a')).status).toBe(200);
    expect((await scrape(e, 'tok-b')).text).toContain('llm_d_epp_ready_endpoints');
  });

  it('kill takes metrics and health down with ext_proc; restart serves all three on the same ports', async () => {
    const e = await epp({ stock: true });
    const ports = [e.address, e.healthAddress, e.metricsOrigin];
    await e.kill();
    await expect(scrape(e)).rejects.toThrow();
    await e.restart();
    expect([e.address, e.healthAddress, e.metricsOrigin]).toEqual(ports);
    expect((await scrape(e)).status).toBe(200);
    expect(await check(e.healthAddress, 'readiness')).toEqual(SERVING);
  });
});
