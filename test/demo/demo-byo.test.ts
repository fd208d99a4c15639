/**
 * `npm run demo -- --gateway byo`, end to end: the demo as a child process, the router as
 * the Endpoint Picker of the multi-cluster InferencePool the demo writes, and the front door
 * calling it the way Envoy AI Gateway calls a pool's Endpoint Picker (ext_proc over TLS to
 * the picker port). Every request crosses: front door -> picker port (TLS) -> mcip-router ->
 * simulated EPP of the picked cluster -> simulated model server; then cluster-b's EPP is
 * stopped (a fault, as in the own-Envoy shape).
 */
import { existsSync } from 'node:fs';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { layout, portIsFree, portsOf } from '../../demo/layout.js';
import { peerCertificate } from '../helpers/peer-certificate.js';
import { agent, alive, complete, ensureBuild, freeBasePort, interrupt, killDemo, many, PODS, startDemo, type DemoRun } from './demo-run.js';

beforeAll(ensureBuild, 120_000);

describe('npm run demo -- --gateway byo', () => {
  let base: number;
  let demo: DemoRun;
  let routerPid: number;
  let configFile: string;
  let poolFile: string;
  /** Seconds after "Ready." when cluster-b's EPP stops: the split test must finish before. */
  const FAULT_AFTER_S = 20;

  beforeAll(async () => {
    base = await freeBasePort('byo');
    const args = ['--gateway', 'byo', '--no-build', '--base-port', String(base), '--load', '20', '--kill-epp', 'cluster-b', '--after', String(FAULT_AFTER_S), '--duration', '90'];
    ({ demo, routerPid, configFile } = await startDemo(args));
    poolFile = (await demo.waitFor(/manifest: (\S+multi-cluster-pool\.yaml)/, 1000))[1]!;
  }, 90_000);

  afterAll(async () => {
    await killDemo(demo, routerPid);
    await agent.close();
  });

  it('explains the shape: the router as the Endpoint Picker of the multi-cluster pool, which gateway the front door stands for, the guide', () => {
    const out = demo.output();
    expect(out).toContain(`InferencePool/default/llm on picker port ${base + 3}, answer direct: weight 1 InferencePool llm-pool (cluster-a), weight 1 InferencePoolImport llm-pool (cluster-b)`);
    expect(out).toMatch(/Endpoint Picker: picker port 127\.0\.0\.1:\d+\s+\(ext_proc over TLS/);
    expect(out).toMatch(/stand-in for the gateway you already run[\s\S]*Envoy AI Gateway/);
    expect(out).toContain('docs/bring-your-own-gateway.md');
    expect(out).toContain(`curl -s http://127.0.0.1:${base}/v1/completions`);
    expect(existsSync(poolFile)).toBe(true);
  });

  it('serves the picker port over TLS with the self-signed certificate naming the router\'s Service', async () => {
    const cert = await peerCertificate('127.0.0.1', base + 3);
    expect(cert.subjectAltName).toContain('DNS:mcip-router.default.svc');
  });

  it('serves requests from both clusters through the picker port, counted under the multi-cluster pool', async () => {
    const n = 120;
    const clusters = await many(base, n, 8);
    expect(demo.output(), 'the fault happened before the split was measured: raise FAULT_AFTER_S').not.toMatch(/>>> /);
    const a = clusters.filter((c) => c === 'cluster-a').length;
    const b = clusters.filter((c) => c === 'cluster-b').length;
    expect(a + b, `errors: ${clusters.filter((c) => c.startsWith('error')).join(', ')}`).toBe(n);
    // GIE's conformance tolerance for a weighted split: max(0.10, 4.5 * sqrt(p(1-p)/n)).
    expect(Math.abs(a / n - 0.5)).toBeLessThanOrEqual(Math.max(0.1, 4.5 * Math.sqrt((0.5 * 0.5) / n)));
    // The response path went through the router to the EPP of the cluster that served it.
    const one = await complete(base);
    expect(one.headers['x-demo-picked-by']).toBe(`llm-pool-epp (${one.body.served_by!.cluster})`);
    // Server-sent events come back through the full-duplex response path too.
    const stream = await request(`http://127.0.0.1:${base}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'llama3-8b', prompt: 'Hi', stream: true }),
      dispatcher: agent,
    });
    expect(stream.statusCode).toBe(200);
    expect((await stream.body.text()).trim().endsWith('data: [DONE]')).toBe(true);
    // The router attributed them to the multi-cluster pool (the picker port), not to an HTTPRoute.
    const metrics = await (await request(`http://127.0.0.1:${base + 2}/metrics`, { dispatcher: agent })).body.text();
    for (const cluster of ['cluster-a', 'cluster-b']) {
      expect(metrics).toMatch(new RegExp(`mcip_requests_total\\{route="InferencePool/default/llm",pool="default/llm-pool",cluster="${cluster}",outcome="relayed"\\} [1-9]`));
    }
    expect(metrics).not.toMatch(/mcip_requests_total\{route="default\/llm-route"/);
    // The live view's tally shows both clusters.
    expect(demo.output()).toMatch(/req\/s │ cluster-a +[1-9]\d* .*│ cluster-b +[1-9]\d* /);
  });

  it("after cluster-b's EPP stops, requests are served by cluster-a", async () => {
    await demo.waitFor(/>>> kill cluster-b's EPP: /, (FAULT_AFTER_S + 10) * 1000);
    const immediately = await many(base, 20, 4);
    expect(immediately.filter((c) => c !== 'cluster-a')).toEqual([]);
    await demo.waitFor(/\[router\] cluster-b\/llm-pool: (ready → not-ready|ejected)/, 5000);
    const later = await many(base, 40, 4);
    expect(later.filter((c) => c !== 'cluster-a')).toEqual([]);
  });

  it('stops cleanly on Ctrl-C: exit 0, no router, no port (the picker port included) and no generated file left behind', async () => {
    const { code, signal } = await interrupt(demo);
    expect({ code, signal, stderr: demo.stderr() }).toEqual({ code: 0, signal: null, stderr: '' });
    expect(alive(routerPid)).toBe(false);
    expect(existsSync(configFile)).toBe(false);
    expect(existsSync(poolFile)).toBe(false);
    for (const { port, use } of portsOf(layout(base, PODS, 'byo'))) expect(await portIsFree(port), `${port} (${use})`).toBe(true);
  }, 30_000);
});
