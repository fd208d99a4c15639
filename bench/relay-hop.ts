/**
 * What the relay hop of a multi-cluster pool costs (bring your own gateway, relay answers).
 *
 * 1. The verifier alone, in this process: CPU µs per judgement (token check, member and
 *    destination rules, answer encoded) and per token signed (the picker's side).
 * 2. The verifier exchange: the relay verifier server (src/relay/) in this process, driven over
 *    real HTTP/2 by a child process that opens one ext_proc stream per request the way the
 *    relay's Envoy does (request headers with a fresh token, read the answer, half-close);
 *    this process's CPU per exchange (gRPC framing, HTTP/2, decode, verify, answer).
 * 3. Latency through the stand-ins: an Istio stand-in in front of a relay stand-in and the
 *    verifier, against an ORIGINAL_DST gateway stand-in answered directly, same picker stand-in,
 *    same model-server stand-in, sequential requests. The stand-ins are JavaScript, not Envoy:
 *    the difference is the verifier exchange plus one stand-in HTTP hop, not Envoy's cost.
 *
 *   tsx bench/relay-hop.ts [--measure-ms 5000] [--concurrency 16] [--requests 400] [--micro 50000]
 */
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { relaySchema } from '../src/config/relay-schema.js';
import { RELAY_TOKEN_HEADER, RelaySigner, RelayVerifier, type RelayClaim } from '../src/credentials/relay-token.js';
import { judgeRelayRequest, relayForwardAnswer } from '../src/relay/relay-judge.js';
import { originalDst } from '../test/harness/envoy-standin.js';
import { createOriginalDstGateway } from '../test/harness/gateways/original-dst.js';
import { createOverrideHostGateway, istioOptions } from '../test/harness/gateways/override-host.js';
import { pickingScript, startScriptedEpp, type PickAnswer } from '../test/harness/gateways/scripted-epp.js';
import { forwardHttp } from '../test/harness/http-upstream.js';
import { startRelayStandin } from '../test/harness/relay-standin.js';
import { newHistogram, summarize } from './lib/hist.js';
import { VerifierClient } from './lib/relay-exchange.js';
import { fakeSnapshot, rules, startVerifier } from './lib/relay-verifier.js';

const { values } = parseArgs({
  options: {
    child: { type: 'string' },
    key: { type: 'string' },
    'measure-ms': { type: 'string', default: '5000' },
    concurrency: { type: 'string', default: '16' },
    requests: { type: 'string', default: '400' },
    micro: { type: 'string', default: '50000' },
  },
});
const log = (msg: string): void => void process.stderr.write(`[bench relay-hop] ${msg}\n`);
const CLAIM: RelayClaim = { target: '10.1.2.3:8000', kind: 'endpoint', cluster: 'cluster-b' };

/** Child: `concurrency` loops, each one ext_proc stream per request over one HTTP/2 connection, until told to stop. */
async function child(target: string, key: Buffer, concurrency: number): Promise<void> {
  const signer = new RelaySigner(() => ({ keys: [key] }), 10_000);
  const verifier = new VerifierClient(target);
  let running = true;
  let exchanges = 0;
  let failures = 0;
  const one = async () => ((await verifier.exchange(signer.sign(CLAIM, Date.now()))) === undefined ? exchanges++ : failures++);
  const loop = async () => {
    while (running) await one();
  };
  process.on('message', (m: string) => {
    if (m === 'start') for (let i = 0; i < concurrency; i++) void loop();
    if (m === 'count') process.send!({ exchanges, failures });
    if (m === 'stop') {
      running = false;
      process.send!({ exchanges, failures });
      setTimeout(() => process.exit(0), 200);
    }
  });
  process.send!('ready');
}

function micro(key: Buffer, n: number): void {
  const relay = relaySchema.parse({ keyFile: 'x', maxNonces: n + 10 });
  const signer = new RelaySigner(() => ({ keys: [key] }), relay.tokenTtlMs);
  const verifier = new RelayVerifier({ keys: () => ({ keys: [key] }), ttlMs: relay.tokenTtlMs, maxSkewMs: relay.maxSkewMs, maxNonces: relay.maxNonces });
  const now = Date.now();
  const tokens = Array.from({ length: n }, () => signer.sign(CLAIM, now));
  const deps = { verify: (tok: string | undefined, ms: number) => verifier.verify(tok, ms), snapshot: () => fakeSnapshot, rules };
  // Warm-up (JIT): a separate verifier, so the measured one sees only fresh nonces.
  const warm = new RelayVerifier({ keys: () => ({ keys: [key] }), ttlMs: relay.tokenTtlMs, maxSkewMs: relay.maxSkewMs, maxNonces: relay.maxNonces });
  for (let i = 0; i < 5000; i++) {
    const j = judgeRelayRequest(signer.sign(CLAIM, now), now, { ...deps, verify: (tok, ms) => warm.verify(tok, ms) });
    if (j.forward) relayForwardAnswer(j.claim);
  }
  let t = process.cpuUsage();
  for (let i = 0; i < n; i++) signer.sign(CLAIM, now);
  const signed = process.cpuUsage(t);
  const signUs = (signed.user + signed.system) / n;
  t = process.cpuUsage();
  let forwarded = 0;
  for (const tok of tokens) {
    const j = judgeRelayRequest(tok, now, deps);
    if (j.forward) forwarded += relayForwardAnswer(j.claim).length > 0 ? 1 : 0;
  }
  const u = process.cpuUsage(t);
  log(`micro: sign ${signUs.toFixed(1)} µs/token; judge + answer ${((u.user + u.system) / n).toFixed(1)} µs/request (${forwarded}/${n} forwarded)`);
}

async function exchange(key: Buffer, keyFile: string, measureMs: number, concurrency: number): Promise<void> {
  const { address, stop } = await startVerifier(keyFile);
  const c = fork(process.argv[1]!, ['--child', address, '--key', key.toString('base64'), '--concurrency', String(concurrency)], { execArgv: process.execArgv });
  const reply = () => new Promise<{ exchanges: number; failures: number }>((r) => c.once('message', r));
  await reply(); // ready
  c.send('start');
  await new Promise((r) => setTimeout(r, 1000)); // warm-up
  c.send('count');
  const before = await reply();
  const t0 = process.cpuUsage();
  const w0 = performance.now();
  await new Promise((r) => setTimeout(r, measureMs));
  const cpu = process.cpuUsage(t0);
  const secs = (performance.now() - w0) / 1000;
  c.send('stop');
  const after = await reply();
  const n = after.exchanges - before.exchanges;
  log(
    `exchange: ${n} exchanges (${after.failures} failed) in ${secs.toFixed(1)} s at ${concurrency} streams = ${(n / secs).toFixed(0)}/s; ` +
      `verifier CPU ${((cpu.user + cpu.system) / n).toFixed(1)} µs/exchange (gRPC over HTTP/2 included)`,
  );
  await stop();
}

async function latency(key: Buffer, keyFile: string, requests: number): Promise<void> {
  const target = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.end('{"choices":[]}'));
  });
  await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
  const targetAddress = `127.0.0.1:${(target.address() as AddressInfo).port}`;
  const verifier = await startVerifier(keyFile);
  const relay = await startRelayStandin({ verifier: verifier.address });
  const signer = new RelaySigner(() => ({ keys: [key] }), 10_000);
  const claim: RelayClaim = { target: targetAddress, kind: 'endpoint', cluster: 'cluster-b' };
  let answer: () => PickAnswer = () => ({ header: targetAddress, metadata: targetAddress });
  const picker = await startScriptedEpp(pickingScript(() => answer()));
  const body = JSON.stringify({ model: 'llama', messages: [{ role: 'user', content: 'x'.repeat(1800) }] });
  const req = { authority: 'llm.example', path: '/v1/chat/completions', body, upstream: (d: string, f: Parameters<typeof forwardHttp>[1]) => forwardHttp(d, f) };
  const run = async (name: string, send: () => Promise<{ status: number }>): Promise<number> => {
    for (let i = 0; i < 50; i++) await send();
    const h = newHistogram();
    for (let i = 0; i < requests; i++) {
      const t = performance.now();
      const r = await send();
      h.recordValue(Math.max(1, Math.round((performance.now() - t) * 1000)));
      if (r.status !== 200) throw new Error(`${name}: status ${r.status}`);
    }
    const s = summarize(h);
    log(`latency ${name}: p50 ${s.p50.toFixed(2)} ms, p90 ${s.p90.toFixed(2)} ms, p99 ${s.p99.toFixed(2)} ms (${requests} sequential requests)`);
    return s.p50;
  };
  const direct = createOriginalDstGateway(picker.address, { ...istioOptions(), hostSelector: originalDst });
  const d = await run('direct answer (ORIGINAL_DST gateway -> model server)', () => direct.run(req));
  direct.close();
  answer = () => ({ header: relay.address, metadata: relay.address, headers: { [RELAY_TOKEN_HEADER]: signer.sign(claim, Date.now()) } });
  const istio = createOverrideHostGateway(picker.address, [relay.address]);
  const r = await run('relay answer (Istio -> relay -> verifier -> model server)', () => istio.run(req));
  istio.close();
  log(`latency: the relay hop adds ${(r - d).toFixed(2)} ms at p50 through the stand-ins`);
  picker.stop();
  await relay.close();
  await verifier.stop();
  target.close();
}

if (values.child !== undefined) {
  await child(values.child, Buffer.from(values.key!, 'base64'), Number(values.concurrency));
} else {
  const key = randomBytes(32);
  const dir = mkdtempSync(join(tmpdir(), 'relay-hop-'));
  writeFileSync(join(dir, 'key'), `${key.toString('base64')}\n`);
  micro(key, Number(values.micro));
  await exchange(key, join(dir, 'key'), Number(values['measure-ms']), Number(values.concurrency));
  await latency(key, join(dir, 'key'), Number(values.requests));
  process.exit(0);
}
