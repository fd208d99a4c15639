/**
 * One hostile peer against the router's ext_proc server: a victim client (the Envoy stand-in,
 * `--victims` exchanges at a time, Envoy's reset after each) runs alone for `--baseline-s`, then
 * with `--connections` attacker connections that open ext_proc streams and reset them at once
 * (HTTP/2 rapid reset) as fast as the socket takes them, reconnecting whenever they are cut,
 * for `--attack-s`. Reports the victim's latency in both windows, the router process's CPU, the
 * streams the attackers sent and the connections cut. The router runs in its own process
 * (bench/procs/scenario-router.ts).
 *
 *   tsx bench/rapid-reset.ts [--transport http2|grpc-js] [--attack-s 15] [--baseline-s 5]
 *     [--connections 2] [--rate 11220] [--victims 4] [--peer-limits '{"earlyResetBurst":1000000000}']
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { createEnvoyStandin } from '../test/harness/envoy-standin.js';
import { rawH2Connect } from '../test/helpers/raw-h2.js';
import { frames, jsonBody } from '../test/extproc/scenario.js';
import { procUsage } from './lib/proc.js';

const { values: a } = parseArgs({
  options: {
    transport: { type: 'string', default: 'http2' },
    'attack-s': { type: 'string', default: '15' },
    'baseline-s': { type: 'string', default: '5' },
    connections: { type: 'string', default: '2' },
    victims: { type: 'string', default: '4' },
    /** Streams each attacker connection opens and resets per second (the measurement this reproduces: 336,600 in 15 s over 2 connections). */
    rate: { type: 'string', default: '11220' },
    'peer-limits': { type: 'string', default: '{}' },
    /** Internal: run as the attackers' process against this address. */
    'attack-address': { type: 'string' },
  },
});

/** Attackers (a process of their own, so their loop does not slow the victim's client): until `seconds` pass, reconnecting when cut. */
async function attackers(target: string, seconds: number): Promise<{ sent: number; connections: number; goaways: Record<string, number> }> {
  const [h, p] = [target.replace(/:\d+$/, ''), Number(target.split(':').pop())];
  const end = performance.now() + seconds * 1000;
  const stats = { sent: 0, connections: 0, goaways: {} as Record<string, number> };
  await Promise.all(
    Array.from({ length: Number(a.connections) }, async () => {
      while (performance.now() < end) {
        // From another loopback address: another peer than the victim.
        const c = await rawH2Connect(h, p, false, '127.0.0.2').catch(() => undefined);
        if (!c) continue;
        stats.connections++;
        // In 10 ms ticks at --rate, so the attackers' own CPU is the same whatever the router does.
        const perTick = Math.max(1, Math.round(Number(a.rate) / 100));
        for (let next = performance.now(); performance.now() < end && !c.isClosed(); next += 10) {
          stats.sent += await c.open(perTick, { reset: true });
          await new Promise((r) => setTimeout(r, Math.max(0, next + 10 - performance.now())));
        }
        await new Promise((r) => setTimeout(r, 10)); // a refused reconnect does not spin
        const code = c.goaway === undefined ? (c.framesReceived === 0 ? 'refused (cooldown)' : 'none') : c.goaway.errorCode === 0xb ? 'ENHANCE_YOUR_CALM' : `code ${c.goaway.errorCode}`;
        stats.goaways[code] = (stats.goaways[code] ?? 0) + 1;
        c.destroy();
      }
    }),
  );
  return stats;
}

if (a['attack-address'] !== undefined) {
  process.stdout.write(`${JSON.stringify(await attackers(a['attack-address'], Number(a['attack-s'])))}\n`);
  process.exit(0);
}

const child = spawn(process.execPath, ['--import', 'tsx', new URL('./procs/scenario-router.ts', import.meta.url).pathname], {
  env: { ...process.env, MCIP_BENCH_TRANSPORT: a.transport, MCIP_BENCH_PEER_LIMITS: a['peer-limits'] },
  stdio: ['pipe', 'pipe', 'inherit'],
});
const address = await new Promise<string>((resolve) => {
  createInterface({ input: child.stdout! }).once('line', (l) => resolve((JSON.parse(l) as { address: string }).address));
});
const envoy = createEnvoyStandin(address);
const request = { authority: 'local.example', path: '/v1/completions', body: frames(jsonBody(512), 256) };

/** Victim exchanges until `stop`; latencies in ms. */
async function victims(stop: () => boolean): Promise<{ ms: number[]; failed: number }> {
  const ms: number[] = [];
  let failed = 0;
  await Promise.all(
    Array.from({ length: Number(a.victims) }, async () => {
      while (!stop()) {
        const t0 = performance.now();
        const r = await envoy.run(request);
        if (r.outcome === 'forwarded') ms.push(performance.now() - t0);
        else failed++;
      }
    }),
  );
  return { ms, failed };
}

const q = (xs: number[], p: number): number => [...xs].sort((x, y) => x - y)[Math.min(xs.length - 1, Math.floor(xs.length * p))] ?? NaN;

async function window(seconds: number, attack: boolean) {
  const end = performance.now() + seconds * 1000;
  const stop = () => performance.now() >= end;
  const cpu0 = procUsage(child.pid!).cpuMs;
  let attacked: Promise<{ sent: number; connections: number; goaways: Record<string, number> }> | undefined;
  if (attack) {
    const p = spawn(process.execPath, ['--import', 'tsx', new URL(import.meta.url).pathname, '--attack-address', address, '--attack-s', String(seconds), '--connections', a.connections!, '--rate', a.rate!], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    attacked = new Promise((resolve) => createInterface({ input: p.stdout! }).once('line', (l) => resolve(JSON.parse(l))));
  }
  const v = await victims(stop);
  const cpuMs = procUsage(child.pid!).cpuMs - cpu0;
  const stats = (await attacked) ?? { sent: 0, connections: 0, goaways: {} };
  return { seconds, exchanges: v.ms.length, failed: v.failed, p50: q(v.ms, 0.5), p99: q(v.ms, 0.99), routerCpuMs: cpuMs, ...stats };
}

await victims(((n) => () => n-- <= 0)(200)); // warm-up
const baseline = await window(Number(a['baseline-s']), false);
const attack = await window(Number(a['attack-s']), true);
envoy.close();
child.stdin!.end();
/** Router CPU beyond what the victim's exchanges cost at the baseline's CPU per exchange: what the attack cost. */
const perExchange = baseline.routerCpuMs / Math.max(1, baseline.exchanges);
const row = (name: string, w: Awaited<ReturnType<typeof window>>) =>
  `| ${name} | ${w.exchanges} (${w.failed} failed) | ${w.p50.toFixed(1)} | ${w.p99.toFixed(1)} | ${(w.routerCpuMs / 1000).toFixed(2)} s (${((w.routerCpuMs / (w.seconds * 1000)) * 100).toFixed(0)}%) | ${((w.routerCpuMs - w.exchanges * perExchange) / 1000).toFixed(2)} s | ${w.sent} | ${w.connections} | ${Object.entries(w.goaways).map(([k, n]) => `${k} ${n}`).join(', ') || '-'} |`;
console.log(`transport ${a.transport}, ${a.connections} attacker connections at ${a.rate} resets/s each, ${a.victims} victim exchanges at a time, peerLimits ${a['peer-limits']}`);
console.log('| window | victim exchanges | p50 ms | p99 ms | router CPU | of it beyond the victim exchanges | reset streams sent | attacker connections | how they ended (GOAWAY) |');
console.log('|---|---|---|---|---|---|---|---|---|');
console.log(row(`baseline ${baseline.seconds} s`, baseline));
console.log(row(`attack ${attack.seconds} s`, attack));
