/**
 * `npm run demo`, end to end: the demo runs as a child process the way the
 * package script runs it (the tsx CLI on demo/main.ts), on a free non-default
 * base port, with its own load and a kill of cluster-b. The test talks to the
 * front door over real HTTP, so every request crosses the whole chain: front
 * door (Envoy stand-in) -> mcip-router (child of the demo, from dist/) ->
 * simulated EPP of the picked cluster -> simulated model server.
 */
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { layout, portIsFree, portsOf } from '../../demo/layout.js';
import { eventually } from '../helpers/eventually.js';
import { agent, alive, complete, ensureBuild, freeBasePort, interrupt, killDemo, many, PODS, processesWith, runDemo, startDemo, type DemoRun } from './demo-run.js';

beforeAll(ensureBuild, 120_000);

describe('npm run demo', () => {
  let base: number;
  let demo: DemoRun;
  let routerPid: number;
  let configFile: string;
  /** Seconds after "Ready." when the demo kills cluster-b: the split test must finish before. */
  const KILL_AFTER_S = 20;

  beforeAll(async () => {
    base = await freeBasePort();
    const args = ['--no-build', '--base-port', String(base), '--load', '20', '--kill', 'cluster-b', '--after', String(KILL_AFTER_S), '--duration', '90'];
    ({ demo, routerPid, configFile } = await startDemo(args));
  }, 90_000);

  afterAll(async () => {
    await killDemo(demo, routerPid);
    await agent.close();
  });

  it('prints the curl commands, the cluster layout and that production uses Envoy', () => {
    const out = demo.output();
    expect(out).toContain(`curl -s http://127.0.0.1:${base}/v1/completions`);
    expect(out).toContain(`curl -s http://127.0.0.1:${base}/v1/chat/completions`);
    expect(out).toMatch(/stand-in for Envoy[\s\S]*envoy\/envoy\.yaml/i);
    expect(out).toContain('examples/cluster-a');
    expect(alive(routerPid)).toBe(true);
  });

  it('serves completions through the whole chain, naming the cluster and pod', async () => {
    const r = await complete(base);
    expect(r.status).toBe(200);
    const served = r.body.served_by!;
    expect(['cluster-a', 'cluster-b']).toContain(served.cluster);
    expect(served.pod).toMatch(new RegExp(`^vllm-llama3-8b-${served.cluster.slice(-1)}-\\d$`));
    expect(r.body.choices?.[0]?.text).toContain(`Hello from ${served.cluster}, pod ${served.pod}`);
    // The response path went through the router to the EPP of the same cluster (it sets this header).
    expect(r.headers['x-demo-picked-by']).toBe(`llm-pool-epp (${served.cluster})`);

    const chat = await complete(base, '/v1/chat/completions');
    expect(chat.status).toBe(200);
    expect(chat.body.choices?.[0]?.message?.content).toMatch(/^Hello from cluster-[ab], pod vllm-llama3-8b-[ab]-\d\.$/);

    // Streaming: SSE chunks come back through the full-duplex response path.
    const stream = await request(`http://127.0.0.1:${base}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'llama3-8b', prompt: 'Hi', stream: true }),
      dispatcher: agent,
    });
    const sse = await stream.body.text();
    expect(stream.statusCode).toBe(200);
    expect(sse.trim().endsWith('data: [DONE]')).toBe(true);
    expect(sse.match(/^data: \{/gm)?.length).toBeGreaterThan(3);

    // GIE-like EPP answer for a body without a model: an immediate 400.
    const bad = await complete(base, '/v1/completions', { model: undefined });
    expect(bad.status).toBe(400);

    // The live view printed a line for each of these requests (they are not generated load).
    await demo.waitFor(new RegExp(`POST /v1/completions → 200 served by ${served.cluster}/${served.pod}`), 3000);
  });

  it('splits traffic about 50/50 between the local pool and the pool imported from cluster-b', async () => {
    const n = 200;
    const clusters = await many(base, n, 8);
    expect(demo.output(), 'the kill happened before the split was measured: raise KILL_AFTER_S').not.toMatch(/>>> kill cluster-b/);
    const a = clusters.filter((c) => c === 'cluster-a').length;
    const b = clusters.filter((c) => c === 'cluster-b').length;
    expect(a + b, `errors: ${clusters.filter((c) => c.startsWith('error')).join(', ')}`).toBe(n);
    // GIE's conformance tolerance for a weighted split: max(0.10, 4.5 * sqrt(p(1-p)/n)).
    const tolerance = Math.max(0.1, 4.5 * Math.sqrt((0.5 * 0.5) / n));
    expect(Math.abs(a / n - 0.5)).toBeLessThanOrEqual(tolerance);
    // The demo's own load is split too, and its per-second tally shows both clusters.
    expect(demo.output()).toMatch(/req\/s │ cluster-a +[1-9]\d* .*│ cluster-b +[1-9]\d* /);
  });

  it('after cluster-b is killed, requests are served by cluster-a', async () => {
    await demo.waitFor(/>>> kill cluster-b: /, (KILL_AFTER_S + 10) * 1000);
    // Right away: a request picked for cluster-b finds its EPP gone and the router fails over.
    const immediately = await many(base, 20, 4);
    expect(immediately.filter((c) => c !== 'cluster-a')).toEqual([]);
    // And once health checks and outlier detection have seen it, the router stops picking cluster-b.
    await demo.waitFor(/\[router\] cluster-b\/llm-pool: (ready → not-ready|ejected)/, 5000);
    const later = await many(base, 40, 4);
    expect(later.filter((c) => c !== 'cluster-a')).toEqual([]);
    // The tally shows the demo's own load on cluster-a only (the first tally after the kill may still count earlier requests).
    const tallies = (): string[] =>
      (demo.output().split(/>>> kill cluster-b: .*\n/)[1] ?? '').split('\n').filter((l) => l.includes('req/s │'));
    await eventually(() => expect(tallies().length).toBeGreaterThanOrEqual(3), 5000, 100);
    expect(tallies().at(-1)).toMatch(/cluster-a +[1-9]\d* .*│ cluster-b +0 /);
  });

  it('stops cleanly on Ctrl-C (SIGINT to the process group): exit 0, a summary, no process or port left behind', async () => {
    const { code, signal } = await interrupt(demo);
    expect({ code, signal, stderr: demo.stderr() }).toEqual({ code: 0, signal: null, stderr: '' });
    const out = demo.output();
    expect(out).toMatch(/stopping \(SIGINT\)/);
    expect(out).toMatch(/after "kill cluster-b" .*cluster-b 0 \(0%\)/);
    expect(out).toContain('Stopped: router, front door, EPPs and model servers are all down.');
    expect(alive(routerPid)).toBe(false);
    expect(processesWith(configFile)).toEqual([]);
    expect(processesWith(`--base-port ${base}`)).toEqual([]);
    expect(existsSync(configFile)).toBe(false);
    for (const { port, use } of portsOf(layout(base, PODS))) expect(await portIsFree(port), `${port} (${use})`).toBe(true);
  }, 30_000);
});

describe('npm run demo: flags', () => {
  it('says which port is taken and how to move the demo', async () => {
    const base = await freeBasePort();
    const blocker: Server = createServer();
    await new Promise<void>((r) => blocker.listen(base + 2, '127.0.0.1', () => r()));
    try {
      const run = runDemo(['--no-build', '--base-port', String(base)]);
      const { code } = await run.exited;
      expect(code).toBe(2);
      expect(run.stderr()).toContain(`${base + 2} (mcip-router admin)`);
      expect(run.stderr()).toContain('--base-port N');
    } finally {
      await new Promise<void>((r) => blocker.close(() => r()));
    }
  });

  it('stops by itself after --duration and rejects unknown flags', async () => {
    const base = await freeBasePort();
    const run = runDemo(['--no-build', '--base-port', String(base), '--duration', '1']);
    const { code } = await run.exited;
    expect({ code, stderr: run.stderr() }).toEqual({ code: 0, stderr: '' });
    expect(run.output()).toMatch(/stopping \(--duration\)/);

    const bad = runDemo(['--kill', 'cluster-z']);
    expect((await bad.exited).code).toBe(2);
    expect(bad.stderr()).toContain('unknown cluster "cluster-z"');
  }, 40_000);
});
