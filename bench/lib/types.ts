/**
 * The shape of a benchmark run's results (bench/results/<date>.json). Every
 * latency is in milliseconds, every CPU figure in milliseconds of CPU time
 * (user + system), every memory figure in MiB.
 */

export const SETUPS = ['direct', 'h2floor', 'floor', 'router', 'parent'] as const;
/**
 * direct: generator -> fast EPP; h2floor: -> raw node:http2 relay (no grpc-js) -> EPP; floor: -> grpc-js
 * pass-through -> EPP; router: -> mcip-router (Endpoint) -> EPP; parent: -> mcip-router (Parent mode, answers itself).
 */
export type Setup = (typeof SETUPS)[number];

export const VARIANTS = ['2k', '64k'] as const;
/** Request body size of a realistic JSON completion request: ~2 KiB or ~64 KiB. */
export type Variant = (typeof VARIANTS)[number];

export type Load =
  | { readonly kind: 'closed'; readonly concurrency: number }
  | { readonly kind: 'rate'; readonly rps: number };

export function loadLabel(load: Load): string {
  return load.kind === 'closed' ? `c=${load.concurrency}` : `${load.rps} req/s`;
}

export interface LatencySummary {
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly p999: number;
  readonly max: number;
  readonly mean: number;
}

/** One generator window (or several merged): what the load generator saw. */
export interface WindowResult {
  /** Completed exchanges. */
  readonly requests: number;
  readonly errors: number;
  readonly elapsedMs: number;
  /** HDR histogram of exchange latency in microseconds, compressed base64. */
  readonly histogram: string;
  /** Generator CPU over the window (% of one core): near 100 means the generator itself limits the run. */
  readonly generatorCpuPct: number;
  /** First error message seen, if any. */
  readonly firstError?: string;
}

/** A window of streamed responses: `requests` are whole responses; the histograms (µs) are per SSE event. */
export interface StreamWindowResult extends WindowResult {
  /** Events echoed back whole (those of unfinished responses included). */
  readonly chunks: number;
  /** Event sent -> its echo complete. */
  readonly chunkLatency: string;
  /** Between consecutive events' echoes as the client sees them. */
  readonly chunkGap: string;
}

/** CPU and memory of one server process over a measured window. */
export interface ProcessUsage {
  readonly cpuMs: number;
  readonly cpuMsPerRequest: number;
  /** CPU as % of one core over the window. */
  readonly cpuPct: number;
  readonly rssMaxMb: number;
}

export interface Cell<S extends string = Setup> {
  readonly setup: S;
  readonly variant: Variant;
  readonly load: Load;
  readonly label: string;
  readonly requests: number;
  readonly errors: number;
  readonly durationS: number;
  readonly throughput: number;
  readonly latencyMs: LatencySummary;
  readonly histogram: string;
  readonly generatorCpuPct: number;
  /** The process in front of the EPP (floor proxy or router); absent for direct. */
  readonly proxy?: ProcessUsage;
  /** The fast EPP (absent for parent, where it does no request work). */
  readonly epp?: ProcessUsage;
  readonly firstError?: string;
}

export interface Comparison {
  readonly variant: Variant;
  readonly label: string;
  /** router p50 / floor p50, router throughput / floor throughput. */
  readonly routerOverFloor: { readonly p50: number; readonly p99: number; readonly throughput: number };
  /** router - direct, in ms. */
  readonly routerMinusDirect: { readonly p50: number; readonly p90: number; readonly p99: number };
  readonly parentOverFloor: { readonly p50: number; readonly throughput: number };
  /** Router CPU per request / floor CPU per request. */
  readonly cpuPerRequestRatio: number;
  /** The raw HTTP/2 relay (no grpc-js) - direct, in ms: what any Node hop adds here. */
  readonly h2floorMinusDirect?: { readonly p50: number; readonly p99: number };
  /** Router CPU per request / raw HTTP/2 relay CPU per request. */
  readonly cpuOverH2Floor?: number;
}

/** The set-ups measured with streamed responses (parent mode is left out: it relays no EPP echo). */
export const STREAM_SETUPS = ['direct', 'h2floor', 'floor', 'router'] as const;
export type StreamSetup = (typeof STREAM_SETUPS)[number];

/** One streamed-response cell: `chunks` SSE events per response at `concurrency` streams. */
export interface StreamCell {
  readonly setup: StreamSetup;
  readonly chunks: number;
  readonly concurrency: number;
  readonly responses: number;
  readonly events: number;
  readonly errors: number;
  readonly durationS: number;
  readonly eventsPerS: number;
  /** Event sent -> echoed, as the generator (Envoy) sees it. */
  readonly eventLatencyMs: LatencySummary;
  /** Between consecutive echoed events: what the client sees as inter-token delay. */
  readonly gapMs: LatencySummary;
  /** The hop process (absent for direct): CPU per event (µs) and per response (ms), RSS. */
  readonly proxy?: { readonly cpuUsPerEvent: number; readonly cpuMsPerResponse: number; readonly cpuPct: number; readonly rssMaxMb: number };
  readonly eppCpuUsPerEvent: number;
  readonly firstError?: string;
}

export interface StreamComparison {
  readonly chunks: number;
  readonly concurrency: number;
  /** Router CPU per event / grpc-js floor's, and / raw HTTP/2 relay's. */
  readonly cpuOverFloor: number;
  readonly cpuOverH2Floor: number;
  /** Router inter-event gap - direct's, ms. */
  readonly addedGapMs: { readonly p50: number; readonly p99: number };
  readonly h2floorAddedGapMs: { readonly p50: number; readonly p99: number };
}

export interface StreamingResults {
  readonly cells: readonly StreamCell[];
  readonly comparisons: readonly StreamComparison[];
}

export interface OpenStreamsResult {
  readonly streams: number;
  readonly setup: Setup;
  /** 'fresh': right after start (before the load cells); 'after-load': after every load cell (the heap has grown). */
  readonly phase: 'fresh' | 'after-load';
  readonly idleRssMb: number;
  readonly heldRssMb: number;
  readonly perStreamKb: number;
  readonly eppHeldRssMb: number;
  readonly openMs: number;
}

export interface DataPathResults {
  readonly setups: readonly Setup[];
  readonly variants: readonly Variant[];
  readonly rounds: number;
  readonly warmupMs: number;
  readonly measureMs: number;
  readonly connections: number;
  /** Streams per generator connection before it was replaced (Envoy's max_requests_per_connection); 0 = never (absent before 2026-11-22: never). */
  readonly maxRequestsPerConnection?: number;
  /** Generator connections opened per set-up over the whole run, and still open at the end. */
  readonly generatorConnections?: Record<string, { readonly opened: number; readonly open: number }>;
  /** Extra node flags the routers ran with (--router-node-args). */
  readonly routerNodeArgs?: readonly string[];
  readonly rateRps: Record<string, number>;
  readonly cells: readonly Cell[];
  readonly comparisons: readonly Comparison[];
  readonly openStreams: readonly OpenStreamsResult[];
  /** Router RSS right after start, before any load. */
  readonly routerIdleRssMb: number;
  /** The Endpoint router's view of its candidates once signals were live (id -> readiness). */
  readonly routerSignals: Record<string, string>;
  /** The Endpoint router's own memory view (admin /metrics) after every load cell: heap vs RSS tells growth from a leak. */
  readonly routerMemoryAfterLoad: { readonly rssMb: number; readonly heapUsedMb: number; readonly heapTotalMb: number; readonly externalMb: number };
  /** The routers ran under --cpu-prof (their CPU and RSS figures include the profiler's overhead). */
  readonly profiled: boolean;
  /** Streamed responses (absent in results before 2026-11-25, or with --skip-streaming). */
  readonly streaming?: StreamingResults;
  /** How the generator ended each finished stream in the main cells. */
  readonly closeMode: 'reset' | 'graceful';
  /** The ~2 KiB, 16-stream cell again with the other close mode: what Envoy's RST_STREAM per stream costs each server. */
  readonly closeCheck: { readonly mode: 'reset' | 'graceful'; readonly cells: readonly Cell[] };
}

export interface BuildPoint {
  readonly routes: number;
  readonly clusters: number;
  readonly pools: number;
  readonly imports: number;
  readonly services: number;
  /** Every object handed to the builder. */
  readonly objects: number;
  readonly candidates: number;
  /** Full build with nothing reusable (new ClusterState objects: the builder's per-state caches are cold). */
  readonly buildMs: { readonly median: number; readonly min: number; readonly max: number };
  /** Build after one HTTPRoute changed, the other members' states the same objects (absent in results before 2026-11-21). */
  readonly incrementalBuildMs?: { readonly median: number; readonly min: number; readonly max: number };
  /** Heap retained by the snapshot, and the builder's caches for its states (after GC). */
  readonly snapshotHeapMb: number;
  /** Heap retained by the input objects (after GC). */
  readonly inputHeapMb: number;
  /** One object changed -> listener sees the new snapshot, through the real SnapshotStore. */
  readonly changeToServingMs: { readonly median: number; readonly max: number };
  /** match (+ weighted pick) for one request against this snapshot, ns. */
  readonly matchNs: number;
}

export interface PickerPoint {
  readonly candidates: number;
  readonly policy: string;
  readonly nsPerPick: number;
  /** Building the failover order (only on failover), ns. */
  readonly fallbacksNs: number;
}

export interface ReloadPoint {
  readonly routes: number;
  readonly objects: number;
  /** Router process start to "serving". */
  readonly startupMs: number;
  /** Manifest file replaced -> router logs the new snapshot (includes the configured debounce). */
  readonly reloadMs: { readonly median: number; readonly max: number };
  readonly debounceMs: number;
  readonly routerRssMb: number;
}

export interface ControlPlaneResults {
  readonly build: readonly BuildPoint[];
  readonly picker: readonly PickerPoint[];
  readonly reload: readonly ReloadPoint[];
}

export interface BudgetLine {
  readonly item: string;
  readonly target: string;
  readonly measured: string;
  readonly pass: boolean;
}

export interface ProfileSummary {
  readonly process: string;
  readonly file: string;
  readonly totalMs: number;
  readonly categories: readonly { readonly name: string; readonly ms: number; readonly pct: number }[];
  readonly topSelf: readonly { readonly fn: string; readonly where: string; readonly ms: number; readonly pct: number }[];
  readonly topRouter: readonly { readonly fn: string; readonly where: string; readonly selfMs: number; readonly totalMs: number; readonly pct: number }[];
}

export interface Meta {
  readonly date: string;
  readonly quick: boolean;
  readonly node: string;
  readonly cpus: number;
  readonly cpuModel: string;
  readonly loadAvgStart: readonly number[];
  readonly loadAvgEnd: readonly number[];
  readonly distBuiltAt: string;
  readonly gitHead: string;
  readonly caveat: string;
  readonly wallS: number;
}

export interface BenchResults {
  readonly meta: Meta;
  readonly dataPath: DataPathResults;
  readonly controlPlane: ControlPlaneResults;
  /** Members from ClusterProfiles (absent in results before 2026-11-28, or with --skip-fleet). */
  readonly fleet?: FleetResults;
  readonly budget: readonly BudgetLine[];
  readonly profiles: readonly ProfileSummary[];
  /** The Endpoint Picker role cell (bench/picker-role.ts); absent in runs without it. */
  readonly pickerRole?: PickerRoleResults;
}

/**
 * The Endpoint Picker role cell's set-ups, all on one router process: envoy = the router's own
 * Envoy path (listen.extProc, HTTPRoute matched); picker-direct = a picker port (TLS) of a
 * multi-cluster pool answered directly; picker-relay = a picker port of a pool answered with a
 * relay token, plus the relay's verifier exchange (listen.relay) per request.
 */
export const PICKER_SETUPS = ['envoy', 'picker-direct', 'picker-relay'] as const;
export type PickerSetup = (typeof PICKER_SETUPS)[number];

export interface PickerRoleComparison {
  readonly label: string;
  /** picker-direct router CPU per request / envoy's. */
  readonly directOverEnvoyCpu: number;
  /** picker-direct - envoy, ms. */
  readonly directMinusEnvoy: { readonly p50: number; readonly p99: number };
  /** The relay hop's router CPU per request: picker-relay - picker-direct, ms. */
  readonly relayMinusDirectCpuMs: number;
  /** picker-relay router CPU per request / picker-direct's. */
  readonly relayOverDirectCpu: number;
  /** picker-relay - picker-direct, ms. */
  readonly relayMinusDirect: { readonly p50: number; readonly p99: number };
}

export interface PickerRoleResults {
  readonly variant: Variant;
  readonly rounds: number;
  readonly warmupMs: number;
  readonly measureMs: number;
  readonly connections: number;
  /** proxy = the router process (every set-up), epp = the fast EPP. */
  readonly cells: readonly Cell<PickerSetup>[];
  readonly comparisons: readonly PickerRoleComparison[];
}

/** One fleet size: a fresh router taking `members` members from the hub's ClusterProfiles. */
export interface FleetPoint {
  readonly members: number;
  /** Candidates once every member's exported pools were in the router's snapshot (members x pools per member). */
  readonly candidates: number;
  /** Router process start to its "serving" log line. */
  readonly startupMs: number;
  /** Router process start to the first snapshot holding every member's pools. */
  readonly syncMs: number;
  /** The router at rest (no change anywhere) over `restS` seconds once synced. */
  readonly rest: { readonly cpuPct: number; readonly rssMb: number; readonly heapUsedMb: number };
  /** The export controller (its own process, started once the router synced): to every member holding every steady import and every exported pool reporting Exported True, then at rest in the same window. */
  readonly controller: { readonly syncMs: number; readonly rest: { readonly cpuPct: number; readonly rssMb: number } };
}

/** Least-squares line through the points' (members, value): what one more member costs. */
export interface FleetSlope {
  readonly rssMbPerMember: number;
  readonly cpuPctPerMember: number;
  /** The export controller's RSS per member. */
  readonly controllerRssMbPerMember: number;
}

export interface FleetChurn {
  /** Pool writes per second (an exported pool added to one member, or one removed). */
  readonly opsPerS: number;
  readonly windowS: number;
  readonly ops: number;
  readonly cpuPct: number;
  readonly rssMaxMb: number;
  /** Snapshots the router built during the window. */
  readonly snapshots: number;
  /** The export controller over the same window (it writes every member's imports). */
  readonly controller: { readonly cpuPct: number; readonly rssMaxMb: number };
  /** The API server stand-ins' process over the same window (the other side of every watch). */
  readonly apiserversCpuPct: number;
}

export interface FleetVisibility {
  readonly members: number;
  readonly ms: readonly number[];
  readonly p50: number;
  readonly max: number;
}

export interface FleetResults {
  readonly poolsPerMember: number;
  readonly restS: number;
  readonly points: readonly FleetPoint[];
  readonly slope: FleetSlope;
  /** At the largest size: a new exported pool (and its EPP Service) written to one member -> its candidate in /debug/routes. */
  readonly visibility: FleetVisibility;
  /** The same writes, until the export controller's InferencePoolImport of the pool is in every member. */
  readonly everywhere: FleetVisibility;
  readonly churn: FleetChurn & { readonly members: number };
  /** RSS of the process serving the hub and every member stand-in, at the end. */
  readonly apiserversRssMb: number;
}
