/**
 * What the demo prints while it runs: one line per request you send (every
 * request with --verbose), a per-second tally of which cluster served the
 * traffic with the router's own view of each pool, fault events, the router's
 * notable log lines, and a summary per phase at the end.
 */
import { request } from 'undici';
import { CLUSTERS } from './layout.js';
import type { RequestRecord } from './request-record.js';
import type { RouterLog } from './router-process.js';

const useColor = process.stdout.isTTY === true && process.env.NO_COLOR === undefined;
const paint = (code: number) => (s: string): string => (useColor ? `\x1b[${code}m${s}\x1b[0m` : s);
export const bold = paint(1);
export const dim = paint(2);
const red = paint(31);
const yellow = paint(33);
const CLUSTER_COLORS: Record<string, (s: string) => string> = { 'cluster-a': paint(36), 'cluster-b': paint(35) };
const colorOf = (cluster: string): ((s: string) => string) => CLUSTER_COLORS[cluster] ?? ((s) => s);

/** The router's notable lines in words; anything else as its message and scalar fields. */
function describeRouterLog(e: RouterLog, verbose: boolean): string {
  const pool = typeof e.cluster === 'string' && typeof e.pool === 'string' ? `${e.cluster}/${e.pool}` : undefined;
  if (pool && !verbose) {
    switch (e.msg) {
      case 'pool readiness changed':
        return `${pool}: ${String(e.from)} → ${String(e.to)} (${String(e.reason)})`;
      case 'pool saturation changed':
        return e.saturated === true
          ? `${pool}: saturated (queue ${fmt(e.queueSize)} per pod, KV cache ${fmt(e.kvCache)})`
          : `${pool}: no longer saturated (queue ${fmt(e.queueSize)}, KV cache ${fmt(e.kvCache)})`;
      case 'pool ejected':
        return `${pool}: ejected for ${Math.round(Number(e.durationMs) / 1000)} s (${String(e.reason)} failures on the data path)`;
      case 'pool re-admitted':
        return `${pool}: re-admitted${e.by === undefined ? '' : ` (${String(e.by)})`}`;
    }
  }
  const fields = Object.entries(e)
    .filter(([k, v]) => !LOG_NOISE.has(k) && v !== undefined && typeof v !== 'object')
    .map(([k, v]) => `${k}=${String(v)}`)
    .join(' ');
  return `${String(e.msg ?? '')}${fields ? dim(`  ${fields}`) : ''}`;
}

function fmt(v: unknown): string {
  return typeof v === 'number' ? String(Math.round(v * 100) / 100) : '?';
}

/** Router log messages worth showing at info level: they are the router changing its mind. */
const NOTABLE_ROUTER_MESSAGES = new Set(['pool readiness changed', 'pool saturation changed', 'pool ejected', 'pool re-admitted']);
const LOG_NOISE = new Set(['level', 'time', 'pid', 'hostname', 'msg', 'component', 'name']);

interface Counts {
  byCluster: Map<string, number>;
  errors: Map<number, number>;
  total: number;
  latencies: number[];
}

function emptyCounts(): Counts {
  return { byCluster: new Map(), errors: new Map(), total: 0, latencies: [] };
}

function add(c: Counts, r: RequestRecord): void {
  c.total++;
  if (r.status < 400 && r.cluster) c.byCluster.set(r.cluster, (c.byCluster.get(r.cluster) ?? 0) + 1);
  else c.errors.set(r.status, (c.errors.get(r.status) ?? 0) + 1);
  c.latencies.push(r.ms);
}

function errorsOf(c: Counts): number {
  let n = 0;
  for (const v of c.errors.values()) n += v;
  return n;
}

/** Errors by status, e.g. "503×2 500×1". */
function errorBreakdown(c: Counts): string {
  return [...c.errors].map(([s, n]) => `${s}×${n}`).join(' ');
}

function pct(part: number, total: number): string {
  return total === 0 ? '0%' : `${Math.round((100 * part) / total)}%`;
}

function p50(latencies: number[]): number | undefined {
  if (latencies.length === 0) return undefined;
  const sorted = [...latencies].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

interface Phase {
  readonly label: string;
  readonly fromS: number;
  readonly counts: Counts;
}

export class LiveView {
  private startedAt = performance.now();
  /** Router lines are held back until the banner is out (start()). */
  private held: string[] | undefined = [];
  private second = emptyCounts();
  private readonly phases: Phase[] = [{ label: 'start', fromS: 0, counts: emptyCounts() }];
  private readonly total = emptyCounts();
  private timer: NodeJS.Timeout | undefined;
  private viewTimer: NodeJS.Timeout | undefined;
  private routerView = '';
  private routerViewPending = false;

  constructor(
    private readonly opts: {
      readonly routerAdmin: string;
      readonly verbose: boolean;
      /** Current generated load (req/s), shown in the tally. */
      readonly load: () => number;
      readonly out?: (line: string) => void;
    },
  ) {}

  private print(line: string): void {
    (this.opts.out ?? ((l: string) => process.stdout.write(`${l}\n`)))(line);
  }

  private stamp(): string {
    return dim(`[${this.elapsedS().toFixed(0).padStart(4)}s]`);
  }

  elapsedS(): number {
    return (performance.now() - this.startedAt) / 1000;
  }

  /** The clock starts now (fault times count from here); held router lines are printed. */
  start(): void {
    this.startedAt = performance.now();
    const held = this.held ?? [];
    this.held = undefined;
    for (const line of held) this.print(`${this.stamp()} ${line}`);
    this.timer = setInterval(() => this.tick(), 1000);
    this.timer.unref();
    this.viewTimer = setInterval(() => void this.refreshRouterView(), 500);
    this.viewTimer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    clearInterval(this.viewTimer);
    this.timer = this.viewTimer = undefined;
  }

  record(r: RequestRecord): void {
    add(this.second, r);
    add(this.total, r);
    add(this.phases[this.phases.length - 1]!.counts, r);
    if (!r.generated || this.opts.verbose) this.print(`${this.stamp()} ${this.requestLine(r)}`);
  }

  private requestLine(r: RequestRecord): string {
    const head = `${r.method} ${r.path} → ${r.status >= 400 ? red(String(r.status)) : String(r.status)}`;
    const ms = `${r.ms.toFixed(0)} ms`;
    if (r.cluster) {
      return `${head} served by ${colorOf(r.cluster)(`${r.cluster}/${r.pod ?? '?'}`)} ${dim(`(${r.destination ?? '?'})`)} in ${ms}`;
    }
    return `${head} ${yellow(r.detail ?? 'no model server answered')} in ${ms}`;
  }

  /** A fault or other event; starts a new phase of the summary, named `label`. */
  event(label: string, text: string): void {
    this.phases.push({ label, fromS: this.elapsedS(), counts: emptyCounts() });
    this.print(`${this.stamp()} ${bold(yellow(`>>> ${text}`))}`);
  }

  info(text: string): void {
    this.print(`${this.stamp()} ${text}`);
  }

  routerLog(entry: RouterLog): void {
    const level = entry.level ?? 30;
    const msg = String(entry.msg ?? '');
    if (!(this.opts.verbose || level >= 40 || NOTABLE_ROUTER_MESSAGES.has(msg))) return;
    const tag = level >= 50 ? red('ERROR ') : level >= 40 ? yellow('WARN ') : '';
    const line = `${dim('[router]')} ${tag}${describeRouterLog(entry, this.opts.verbose)}`;
    if (this.held) this.held.push(line);
    else this.print(`${this.stamp()} ${line}`);
  }

  private tick(): void {
    const c = this.second;
    this.second = emptyCounts();
    if (c.total === 0 && this.opts.load() === 0) return;
    const parts = CLUSTERS.map((name) => {
      const n = c.byCluster.get(name) ?? 0;
      const bar = '█'.repeat(c.total === 0 ? 0 : Math.round((20 * n) / c.total));
      return `${colorOf(name)(name)} ${String(n).padStart(4)} ${colorOf(name)(bar.padEnd(20, useColor ? ' ' : '.'))}`;
    });
    const errors = errorsOf(c);
    const errorText = errors === 0 ? 'errors    0' : red(`errors ${String(errors).padStart(4)} (${errorBreakdown(c)})`);
    const latency = p50(c.latencies);
    this.print(
      `${this.stamp()} ${String(c.total).padStart(4)} req/s │ ${parts.join(' │ ')} │ ${errorText} │ p50 ${latency === undefined ? '-' : `${latency.toFixed(0)} ms`}${this.routerView ? ` │ ${this.routerView}` : ''}`,
    );
  }

  /** The router's view of each pool, from its admin /debug/signals. */
  private async refreshRouterView(): Promise<void> {
    if (this.routerViewPending) return;
    this.routerViewPending = true;
    try {
      const res = await request(`http://${this.opts.routerAdmin}/debug/signals`, { headersTimeout: 800, bodyTimeout: 800 });
      const body = (await res.body.json()) as { candidates?: Record<string, { ready?: string; saturated?: boolean; ejected?: boolean; reason?: string }> };
      const parts: string[] = [];
      for (const [id, s] of Object.entries(body.candidates ?? {})) {
        const cluster = id.split('/')[0] ?? id;
        const state = s.ejected ? red('ejected') : s.ready === 'not-ready' ? red('not-ready') : s.saturated ? yellow('saturated') : s.ready ?? '?';
        parts.push(`${cluster.replace(/^cluster-/, '')}:${state}`);
      }
      this.routerView = parts.length > 0 ? `router sees ${parts.join(' ')}` : '';
    } catch {
      this.routerView = '';
    } finally {
      this.routerViewPending = false;
    }
  }

  /** Per phase and overall: which cluster served how much. */
  summary(): string[] {
    const line = (c: Counts): string => {
      const served = CLUSTERS.map((name) => `${name} ${c.byCluster.get(name) ?? 0} (${pct(c.byCluster.get(name) ?? 0, c.total)})`);
      const errors = errorsOf(c);
      const errorDetail = errors === 0 ? '' : ` [${errorBreakdown(c)}]`;
      return `${String(c.total).padStart(5)} requests: ${served.join(', ')}, errors ${errors} (${pct(errors, c.total)})${errorDetail}`;
    };
    const out = [bold(`Summary after ${this.elapsedS().toFixed(1)} s`)];
    const phases = this.phases.filter((p, i) => i === 0 || p.counts.total > 0 || i === this.phases.length - 1);
    if (this.phases.length > 1) {
      phases.forEach((p, i) => {
        const next = phases[i + 1];
        const span = `${p.fromS.toFixed(0)}-${(next?.fromS ?? this.elapsedS()).toFixed(0)} s`;
        const label = p.label === 'start' ? 'before any fault' : `after "${p.label}"`;
        out.push(`  ${`${label} (${span})`.padEnd(40)} ${line(p.counts)}`);
      });
    }
    out.push(`  ${'total'.padEnd(40)} ${line(this.total)}`);
    return out;
  }
}
