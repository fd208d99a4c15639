/**
 * Command-line flags of `npm run demo`. Pure: parseArgs never touches the
 * process, so the flags are easy to test.
 */
import { GATEWAY_SHAPES, type GatewayShape } from './gateway-shape.js';
import { CLUSTERS, MAX_PODS, lastPort, type ClusterName } from './layout.js';

export type FaultKind = 'kill' | 'kill-epp' | 'saturate';

export interface Fault {
  readonly kind: FaultKind;
  readonly cluster: ClusterName;
}

export interface DemoOptions {
  /** envoy: the router beside its own Envoy (HTTPRoute matching); byo: the Endpoint Picker of a multi-cluster pool behind your gateway. */
  readonly gateway: GatewayShape;
  /** Requests per second the demo sends itself (0: none, only what you curl). */
  readonly load: number;
  readonly faults: readonly Fault[];
  /** Seconds after start-up when the faults begin. */
  readonly afterS: number;
  /** Seconds the faults last (undefined: until the demo stops). */
  readonly forS: number | undefined;
  /** Stop by itself after this many seconds (undefined: run until Ctrl-C). */
  readonly durationS: number | undefined;
  readonly basePort: number;
  readonly pods: number;
  /** Base latency of a simulated model server, in ms. */
  readonly latencyMs: number;
  /** Print every request (load included) and every router log line. */
  readonly verbose: boolean;
  /** Run dist/ as it is, without rebuilding a stale build. */
  readonly noBuild: boolean;
}

export type ParsedArgs = { type: 'run'; options: DemoOptions } | { type: 'help' } | { type: 'error'; message: string };

export const DEFAULT_BASE_PORT = 8080;

export const USAGE = `Usage: npm run demo -- [flags]

Runs a simulated two-cluster ClusterSet on 127.0.0.1 (model servers and an
Endpoint Picker per cluster), the real mcip-router, and an HTTP front door
standing in for the gateway. Shows which cluster serves each request.

Flags:
  --gateway SHAPE       envoy (default): the router beside its own Envoy, matching the HTTPRoute;
                        byo: bring your own gateway: the front door calls the router as the Endpoint
                        Picker of a multi-cluster InferencePool (ext_proc over TLS, as Envoy AI Gateway does)
  --load RPS            send RPS requests per second through the front door (default 0: only yours)
  --kill CLUSTER        stop a whole cluster (EPP, metrics and model servers) after --after seconds
  --kill-epp CLUSTER    stop only that cluster's Endpoint Picker
  --saturate CLUSTER    put heavy background load on that cluster's model servers
  --after S             when the fault starts, in seconds after start-up (default 10)
  --for S               how long the fault lasts (default: until the demo stops)
  --duration S          stop by itself after S seconds (default: run until Ctrl-C)
  --base-port N         front door port; everything else listens on N+1..N+${lastPort(0)} (default ${DEFAULT_BASE_PORT})
  --pods N              simulated model servers per cluster, 1-${MAX_PODS} (default 3)
  --latency MS          base latency of a model server response (default 40)
  --verbose             print every request and every router log line
  --no-build            run the router in dist/ as it is (default: rebuild it first when src/ is newer)
  --help                this text

CLUSTER is ${CLUSTERS.join(' or ')}. While it runs, press k (kill/revive cluster-b),
e (stop/start cluster-b's EPP), s (saturate/relieve cluster-b), + or - (load), q or Ctrl-C (quit).
`;

type Spec = { kind: 'number'; min: number; max: number; integer?: boolean } | { kind: 'cluster' } | { kind: 'flag' } | { kind: 'choice'; of: readonly string[] };

const FLAGS: Record<string, Spec> = {
  '--gateway': { kind: 'choice', of: GATEWAY_SHAPES },
  '--load': { kind: 'number', min: 0, max: 2000 },
  '--kill': { kind: 'cluster' },
  '--kill-epp': { kind: 'cluster' },
  '--saturate': { kind: 'cluster' },
  '--after': { kind: 'number', min: 0, max: 86_400 },
  '--for': { kind: 'number', min: 0.1, max: 86_400 },
  '--duration': { kind: 'number', min: 0.1, max: 86_400 },
  '--base-port': { kind: 'number', min: 1024, max: 65_535 - lastPort(0), integer: true },
  '--pods': { kind: 'number', min: 1, max: MAX_PODS, integer: true },
  '--latency': { kind: 'number', min: 0, max: 60_000 },
  '--verbose': { kind: 'flag' },
  '--no-build': { kind: 'flag' },
  '--help': { kind: 'flag' },
  '-h': { kind: 'flag' },
};

export function parseArgs(argv: readonly string[]): ParsedArgs {
  const values = new Map<string, string | number | true>();
  const faults: Fault[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const eq = arg.indexOf('=');
    const name = eq > 0 && arg.startsWith('--') ? arg.slice(0, eq) : arg;
    const spec = FLAGS[name];
    if (spec === undefined) return { type: 'error', message: `unknown flag ${arg}` };
    if (spec.kind === 'flag') {
      if (eq > 0) return { type: 'error', message: `${name} takes no value` };
      values.set(name, true);
      continue;
    }
    let raw: string | undefined;
    if (eq > 0) raw = arg.slice(eq + 1);
    else {
      raw = argv[i + 1];
      i++;
    }
    if (raw === undefined || raw === '') return { type: 'error', message: `${name} needs a value` };
    if (spec.kind === 'cluster') {
      if (!(CLUSTERS as readonly string[]).includes(raw)) {
        return { type: 'error', message: `${name}: unknown cluster "${raw}" (the demo has ${CLUSTERS.join(' and ')})` };
      }
      faults.push({ kind: name.slice(2) as FaultKind, cluster: raw as ClusterName });
      continue;
    }
    if (spec.kind === 'choice') {
      if (!spec.of.includes(raw)) return { type: 'error', message: `${name}: "${raw}" is not one of ${spec.of.join(', ')}` };
      values.set(name, raw);
      continue;
    }
    const n = Number(raw);
    if (!Number.isFinite(n) || (spec.integer && !Number.isInteger(n)) || n < spec.min || n > spec.max) {
      return { type: 'error', message: `${name}: "${raw}" is not ${spec.integer ? 'an integer' : 'a number'} from ${spec.min} to ${spec.max}` };
    }
    values.set(name, n);
  }
  if (values.has('--help') || values.has('-h')) return { type: 'help' };
  const num = (flag: string): number | undefined => values.get(flag) as number | undefined;
  if (faults.length === 0 && (values.has('--after') || values.has('--for'))) {
    return { type: 'error', message: '--after and --for need a fault: --kill, --kill-epp or --saturate' };
  }
  return {
    type: 'run',
    options: {
      gateway: (values.get('--gateway') as GatewayShape | undefined) ?? 'envoy',
      load: num('--load') ?? 0,
      faults,
      afterS: num('--after') ?? 10,
      forS: num('--for'),
      durationS: num('--duration'),
      basePort: num('--base-port') ?? DEFAULT_BASE_PORT,
      pods: num('--pods') ?? 3,
      latencyMs: num('--latency') ?? 40,
      verbose: values.has('--verbose'),
      noBuild: values.has('--no-build'),
    },
  };
}
