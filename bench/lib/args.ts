/**
 * `npm run bench -- [flags]`. Full mode measures every cell in two rounds;
 * --quick is the smoke mode (one short round, fewer cells, smaller control
 * plane repetitions), meant to finish in well under a minute.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { routerMaxRequestsPerConnection } from '../../test/envoy/config-fixtures.js';
import { ROOT } from './paths.js';
import { VARIANTS, type Variant } from './types.js';

export interface BenchOptions {
  readonly quick: boolean;
  readonly profile: boolean;
  /** Results directory (default bench/results). */
  readonly out: string;
  readonly warmupMs: number;
  readonly measureMs: number;
  /** Each cell is measured this many times, set-ups interleaved in a rotating order, and merged. */
  readonly rounds: number;
  readonly concurrency: readonly number[];
  /** Closed-loop concurrency levels measured for the 64 KiB variant. */
  readonly concurrency64k: readonly number[];
  readonly variants: readonly Variant[];
  /** Fixed offered rate (req/s); 0 = half of the floor's c=64 throughput in this run. */
  readonly rate: number;
  /** HTTP/2 connections from the generator (Envoy opens one per worker; 2 workers on 2 cores). */
  readonly connections: number;
  /** Concurrent open streams for the RSS check. */
  readonly openStreams: number;
  /** Only the fresh open-streams cell (router, floor, h2floor): no load cells, streaming, close check or control plane. */
  readonly onlyOpenStreams: boolean;
  readonly skipDataPath: boolean;
  readonly skipControlPlane: boolean;
  /** Control-plane sizes (HTTPRoutes); the largest has 10 pools+imports per route. */
  readonly routeSizes: readonly number[];
  /** Sizes at which a real router process reloads its manifests. */
  readonly reloadSizes: readonly number[];
  /** Update bench/results/latest.{md,svg,json} (default: full runs only). */
  readonly latest: boolean;
  /** Rebuild dist/ first when it is older than src/ (default true). */
  readonly build: boolean;
  /** How the generator ends a finished stream: 'reset' as Envoy does (half-close + RST_STREAM), or 'graceful'. */
  readonly close: 'reset' | 'graceful';
  /**
   * Streams per generator connection before it is drained and replaced, as Envoy's
   * `max_requests_per_connection` on the mcip_router cluster (default: that value in
   * envoy/envoy.yaml); 0 = never.
   */
  readonly maxRequestsPerConnection: number;
  /** Run the Endpoint Picker role cell (picker-role.ts). */
  readonly pickerRole: boolean;
  /** Extra node flags for every router process the bench starts (e.g. --max-semi-space-size=4). */
  readonly routerNodeArgs: readonly string[];
  /** extProc.transport of every router the bench starts (--router-transport; default: the schema's). */
  readonly routerTransport: 'grpc-js' | 'http2' | undefined;
  /** Streamed responses: SSE events per response, and the concurrency levels (empty: none). */
  readonly streamChunks: readonly number[];
  readonly streamConcurrency: readonly number[];
  /** Measured window of each streaming cell (longer than the others: a 1,024-event response at one stream takes a while). */
  readonly streamMeasureMs: number;
  /** Fleet sizes (members from ClusterProfiles), each a fresh router; the largest also times new exports and churn. */
  readonly fleetMembers: readonly number[];
  /** Exported pools per member. */
  readonly fleetPools: number;
  readonly skipFleet: boolean;
  /** Only the fleet cell: results in <date>-fleet.{json,md}, no latest.*. */
  readonly onlyFleet: boolean;
}

export const USAGE = `usage: npm run bench -- [--quick] [--profile] [--out DIR] [--warmup-ms N] [--measure-ms N]
  [--rounds N] [--concurrency 1,16,64,256] [--variants 2k,64k] [--rate N] [--connections N] [--open-streams N]
  [--only-open-streams] [--routes 10,100,1000] [--reload-routes 10,100] [--skip-data-path] [--skip-control-plane] [--latest|--no-latest] [--no-build]
  [--close reset|graceful] [--max-requests-per-connection N] [--router-node-args "FLAGS"]
  [--router-transport grpc-js|http2] [--only picker|fleet] [--skip-picker]
  [--stream-chunks 64,256,1024] [--stream-concurrency 1,16,64] [--stream-measure-ms N] [--skip-streaming]
  [--fleet-members 10,25,50] [--fleet-pools N] [--skip-fleet] [--only-fleet]
`;

/**
 * The node flags the container image runs the router with (the Dockerfile's ENV NODE_OPTIONS line):
 * the routers are measured as they ship unless --router-node-args says otherwise.
 */
export function imageNodeOptions(dockerfile = new URL('../../Dockerfile', import.meta.url)): string[] {
  const line = /^ENV NODE_OPTIONS="([^"]*)"$/m.exec(readFileSync(dockerfile, 'utf8'));
  return line === null ? [] : line[1]!.split(/\s+/).filter((f) => f !== '');
}

function list(v: string): number[] {
  const out = v.split(',').map((s) => Number(s.trim()));
  if (out.length === 0 || out.some((n) => !Number.isInteger(n) || n <= 0)) throw new Error(`bad list "${v}"`);
  return out;
}

function num(v: string | undefined, flag: string): number {
  const n = Number(v);
  if (v === undefined || !Number.isFinite(n) || n < 0) throw new Error(`${flag} needs a non-negative number`);
  return n;
}

export function parseArgs(argv: readonly string[]): BenchOptions {
  const quick = argv.includes('--quick');
  const o = {
    quick,
    profile: false,
    out: resolve(ROOT, 'bench/results'),
    warmupMs: quick ? 200 : 1000,
    measureMs: quick ? 600 : 3000,
    rounds: quick ? 1 : 2,
    concurrency: [1, 16, 64, 256] as readonly number[],
    concurrency64k: (quick ? [16] : [1, 16, 64, 256]) as readonly number[],
    variants: ['2k', '64k'] as readonly Variant[],
    rate: 0,
    connections: 2,
    openStreams: 1000,
    onlyOpenStreams: false,
    skipDataPath: false,
    skipControlPlane: false,
    routeSizes: [10, 100, 300, 1000] as readonly number[],
    reloadSizes: (quick ? [10] : [10, 100, 1000]) as readonly number[],
    latest: !quick,
    build: true,
    close: 'reset' as 'reset' | 'graceful',
    maxRequestsPerConnection: undefined as number | undefined,
    routerNodeArgs: imageNodeOptions() as readonly string[],
    routerTransport: undefined as 'grpc-js' | 'http2' | undefined,
    pickerRole: true,
    streamChunks: (quick ? [64] : [64, 256, 1024]) as readonly number[],
    streamConcurrency: (quick ? [16] : [1, 16, 64]) as readonly number[],
    streamMeasureMs: quick ? 600 : 4000,
    fleetMembers: (quick ? [2, 4] : [10, 25, 50]) as readonly number[],
    fleetPools: quick ? 2 : 10,
    skipFleet: false,
    onlyFleet: false,
  };
  for (let i = 0; i < argv.length; i++) {
    // --flag=value is --flag value.
    const eq = argv[i]!.startsWith('--') ? argv[i]!.indexOf('=') : -1;
    const a = eq > 0 ? argv[i]!.slice(0, eq) : argv[i]!;
    let inline = eq > 0 ? argv[i]!.slice(eq + 1) : undefined;
    const next = (): string => {
      if (inline !== undefined) {
        const v = inline;
        inline = undefined;
        return v;
      }
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    switch (a) {
      case '--quick':
        break;
      case '--profile':
        o.profile = true;
        break;
      case '--out':
        o.out = resolve(next());
        break;
      case '--warmup-ms':
        o.warmupMs = num(next(), a);
        break;
      case '--measure-ms':
        o.measureMs = Math.max(50, num(next(), a));
        break;
      case '--rounds':
        o.rounds = Math.max(1, Math.round(num(next(), a)));
        break;
      case '--concurrency':
        o.concurrency = list(next());
        o.concurrency64k = quick ? o.concurrency.filter((c) => c === 16) : o.concurrency;
        break;
      case '--rate':
        o.rate = num(next(), a);
        break;
      case '--connections':
        o.connections = Math.max(1, Math.round(num(next(), a)));
        break;
      case '--open-streams':
        o.openStreams = Math.max(1, Math.round(num(next(), a)));
        break;
      case '--only-open-streams':
        o.onlyOpenStreams = true;
        o.skipControlPlane = true;
        o.pickerRole = false;
        o.skipFleet = true;
        o.streamChunks = [];
        o.latest = false;
        break;
      case '--variants': {
        const v = next().split(',').map((x) => x.trim());
        if (v.length === 0 || v.some((x) => !(VARIANTS as readonly string[]).includes(x))) throw new Error(`--variants is a list of ${VARIANTS.join(', ')}`);
        o.variants = v as Variant[];
        break;
      }
      case '--routes':
        o.routeSizes = list(next());
        break;
      case '--reload-routes':
        o.reloadSizes = list(next());
        break;
      case '--only': {
        const v = next();
        if (v !== 'picker' && v !== 'fleet') throw new Error(`--only: picker (the Endpoint Picker role cell) or fleet (members from ClusterProfiles), not "${v}"`);
        o.skipDataPath = true;
        o.skipControlPlane = true;
        o.pickerRole = v === 'picker';
        o.onlyFleet = v === 'fleet';
        o.skipFleet = v !== 'fleet';
        o.latest = false;
        break;
      }
      case '--skip-picker':
        o.pickerRole = false;
        break;
      case '--skip-data-path':
        o.skipDataPath = true;
        break;
      case '--skip-control-plane':
        o.skipControlPlane = true;
        break;
      case '--latest':
        o.latest = true;
        break;
      case '--no-latest':
        o.latest = false;
        break;
      case '--no-build':
        o.build = false;
        break;
      case '--close': {
        const v = next();
        if (v !== 'reset' && v !== 'graceful') throw new Error('--close is reset or graceful');
        o.close = v;
        break;
      }
      case '--max-requests-per-connection': {
        const v = num(next(), a);
        if (!Number.isInteger(v)) throw new Error(`${a} needs a whole number (0 = never rotate)`);
        o.maxRequestsPerConnection = v;
        break;
      }
      case '--stream-chunks':
        o.streamChunks = list(next());
        break;
      case '--stream-concurrency':
        o.streamConcurrency = list(next());
        break;
      case '--stream-measure-ms':
        o.streamMeasureMs = Math.max(50, num(next(), a));
        break;
      case '--skip-streaming':
        o.streamChunks = [];
        break;
      case '--fleet-members':
        o.fleetMembers = list(next());
        break;
      case '--fleet-pools':
        o.fleetPools = Math.max(1, Math.round(num(next(), a)));
        break;
      case '--skip-fleet':
        o.skipFleet = true;
        break;
      case '--only-fleet':
        o.onlyFleet = true;
        o.skipDataPath = true;
        o.skipControlPlane = true;
        o.pickerRole = false;
        o.latest = false;
        break;
      case '--router-node-args':
        o.routerNodeArgs = next().split(/\s+/).filter((f) => f !== '');
        break;
      case '--router-transport': {
        const t = next();
        if (t !== 'grpc-js' && t !== 'http2') throw new Error(`--router-transport: grpc-js or http2, not "${t}"`);
        o.routerTransport = t;
        break;
      }
      case '--help':
      case '-h':
        process.stdout.write(USAGE);
        process.exit(0);
        break;
      default:
        throw new Error(`unknown flag ${a}\n${USAGE}`);
    }
    if (inline !== undefined) throw new Error(`${a} takes no value`);
  }
  // A run of one cell never replaces latest.*.
  if (o.onlyFleet) o.latest = false;
  // Envoy's setting for the router cluster, as test/extproc/rapid-reset.scenario.test.ts reads it.
  return { ...o, maxRequestsPerConnection: o.maxRequestsPerConnection ?? routerMaxRequestsPerConnection() };
}
