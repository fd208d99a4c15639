/** The Markdown summary of a run (bench/results/<date>.md). */
import type { BenchResults, ControlPlaneResults, DataPathResults, ProfileSummary, StreamingResults } from '../lib/types.js';
import { pickerRoleSection } from './picker-role.js';
import { cellRows, n, table } from './tables.js';
import { fleetSection } from './fleet.js';

function streamingSection(st: StreamingResults): string[] {
  return [
    '### Streamed responses',
    '',
    'Each response is N server-sent events (OpenAI-style `chat.completion.chunk`, ~220 bytes, the last `data: [DONE]`), each its own ' +
      'response_body message, as Envoy sends an upstream SSE stream in FULL_DUPLEX_STREAMED: every event crosses the hop twice (to the EPP ' +
      'and back as `streamed_response`). The generator sends an event when the previous one\'s echo has arrived (one event in flight per ' +
      'stream), so "event latency" is send -> echo and "gap" the time between consecutive echoes the client sees. CPU per event is the hop ' +
      'process\'s utime+stime over the window / events echoed.',
    '',
    table(
      ['events/response', 'streams', 'set-up', 'events/s', 'responses', 'gap p50 ms', 'gap p99 ms', 'event p99 ms', 'hop CPU µs/event', 'hop CPU ms/response', 'hop CPU %', 'hop RSS MiB', 'EPP CPU µs/event', 'errors'],
      st.cells.map((c) => [
        c.chunks,
        c.concurrency,
        c.setup,
        c.eventsPerS,
        c.responses,
        n(c.gapMs.p50, 3),
        n(c.gapMs.p99, 3),
        n(c.eventLatencyMs.p99, 3),
        n(c.proxy?.cpuUsPerEvent, 1),
        n(c.proxy?.cpuMsPerResponse, 2),
        n(c.proxy?.cpuPct, 0),
        n(c.proxy?.rssMaxMb, 0),
        n(c.eppCpuUsPerEvent, 1),
        c.errors ? `${c.errors} (${(c.firstError ?? '').slice(0, 40)})` : 0,
      ]),
    ),
    '',
    table(
      ['events/response', 'streams', 'router/floor CPU per event', 'router/h2floor CPU per event', 'router added gap p50 ms', 'router added gap p99 ms', 'h2floor added gap p50 ms', 'h2floor added gap p99 ms'],
      st.comparisons.map((c) => [c.chunks, c.concurrency, n(c.cpuOverFloor), n(c.cpuOverH2Floor), n(c.addedGapMs.p50, 3), n(c.addedGapMs.p99, 3), n(c.h2floorAddedGapMs.p50, 3), n(c.h2floorAddedGapMs.p99, 3)]),
    ),
    '',
  ];
}

function profileSection(p: ProfileSummary): string {
  return [
    `### ${p.process} (${p.totalMs.toFixed(0)} ms of CPU sampled)`,
    '',
    table(['category', 'ms', '%'], p.categories.slice(0, 12).map((c) => [c.name, c.ms.toFixed(0), c.pct.toFixed(1)])),
    '',
    'Hottest functions (self time):',
    '',
    table(['function', 'where', 'ms', '%'], p.topSelf.slice(0, 15).map((t) => [`\`${t.fn}\``, t.where, t.ms.toFixed(0), t.pct.toFixed(1)])),
    '',
    'Router functions by inclusive time:',
    '',
    table(['function', 'where', 'self ms', 'total ms', '% of busy'], p.topRouter.slice(0, 15).map((t) => [`\`${t.fn}\``, t.where, t.selfMs.toFixed(0), t.totalMs.toFixed(0), t.pct.toFixed(1)])),
  ].join('\n');
}

/** Title, machine, and the budget table: the head of every summary. */
export function headLines(r: BenchResults, title = 'mcip-router benchmark'): string[] {
  const m = r.meta;
  return [
    `# ${title}, ${m.date}${m.quick ? ' (quick mode: smoke numbers only)' : ''}`,
    '',
    `> ${m.caveat}`,
    '',
    `Machine: ${m.cpus} CPUs (${m.cpuModel}), node ${m.node}; load average ${m.loadAvgStart.map((l) => l.toFixed(2)).join(' / ')} at start, ${m.loadAvgEnd.map((l) => l.toFixed(2)).join(' / ')} at end. ` +
      `Router: dist built ${m.distBuiltAt}, git ${m.gitHead}. Wall time ${m.wallS.toFixed(0)} s.`,
    '',
    '## Budget',
    '',
    table(['', 'item', 'measured', 'budget'], r.budget.map((b) => [b.pass ? '**PASS**' : '**MISS**', b.item, b.measured, b.target])),
    '',
  ];
}

function dataPathSection(dp: DataPathResults, svg: string): string[] {
  const out: string[] = [
    '## Data path',
    '',
    `Set-ups: **direct** (generator -> fast EPP), **h2floor** (generator -> raw node:http2 relay, no grpc-js, DATA piped untouched -> EPP: what Node's HTTP/2 alone costs), ` +
      `**floor** (generator -> minimal grpc-js pass-through proxy -> EPP), ` +
      `**router** (generator -> mcip-router, Endpoint mode, 4 candidate pools over 3 clusters with live gRPC health and metrics -> EPP), ` +
      `the router's 4 pools being 4 ports of the one fast EPP; both floors spread their streams over the same 4 ports in the router's shares (60/10/15/15), so every hop holds the same upstream connections, ` +
      `**parent** (mcip-router in Parent mode answering itself, no EPP hop). Every server is its own process; the router runs from dist/. ` +
      `Each exchange is one FULL_DUPLEX_STREAMED ext_proc stream as Envoy drives it: request headers, the JSON body in 1-3 chunks, ` +
      `wait for the routing answer and the body echo, then response headers and body, wait for their answers, then close the stream ` +
      `(close mode **${dp.closeMode}**: ${dp.closeMode === 'reset' ? 'half-close + RST_STREAM, as Envoy does' : 'half-close, then wait for the processor\'s OK status'}). ` +
      `Latency = stream open to the last echoed response byte. ${dp.rounds} round(s) of ${dp.measureMs} ms per cell (after ${dp.warmupMs} ms warm-up), set-ups interleaved; ` +
      `${dp.connections} HTTP/2 connection slot(s) from the generator per set-up (like Envoy's worker threads), ` +
      `${dp.maxRequestsPerConnection ? `each connection replaced after ${dp.maxRequestsPerConnection} streams as Envoy's \`max_requests_per_connection\` on the mcip_router cluster does` : 'never replaced'}` +
      `${dp.generatorConnections ? ` (connections opened: ${Object.entries(dp.generatorConnections).map(([s, c]) => `${s} ${c.opened}`).join(', ')})` : ''}. ` +
      `${dp.routerNodeArgs?.length ? `Routers ran with \`node ${dp.routerNodeArgs.join(' ')}\`. ` : ''}Fixed-rate cells: ${Object.entries(dp.rateRps).map(([v, r]) => `${r} req/s (${v})`).join(', ')}, ` +
      'latency from the scheduled start (coordinated omission corrected). CPU per request is utime+stime of the proxy process (/proc) over the window / completed exchanges.',
    '',
    `Router signals when measuring: ${Object.entries(dp.routerSignals).map(([id, s]) => `${id}: ${s}`).join('; ') || 'n/a'}.`,
    '',
    `![latency distributions](${svg})`,
    '',
  ];
  for (const v of dp.variants) {
    out.push(`### ${v === '2k' ? '~2 KiB' : '~64 KiB'} request body`, '');
    out.push(
      table(
        ['load', 'set-up', 'req/s', 'p50 ms', 'p90 ms', 'p99 ms', 'p99.9 ms', 'proxy CPU ms/req', 'proxy CPU %', 'proxy RSS MiB', 'EPP CPU ms/req', 'generator CPU %', 'errors'],
        cellRows(dp.cells.filter((c) => c.variant === v)),
      ),
      '',
    );
  }
  out.push('### Router vs floor and direct', '');
  out.push(
    table(
      ['body', 'load', 'router/floor p50', 'router/floor p99', 'router/floor req/s', 'router-direct p50 ms', 'router-direct p90 ms', 'router-direct p99 ms', 'parent/floor p50', 'parent/floor req/s', 'router/floor CPU per req', 'h2floor-direct p50 ms', 'h2floor-direct p99 ms', 'router/h2floor CPU per req'],
      dp.comparisons.map((c) => [
        c.variant,
        c.label,
        n(c.routerOverFloor.p50),
        n(c.routerOverFloor.p99),
        n(c.routerOverFloor.throughput),
        n(c.routerMinusDirect.p50, 3),
        n(c.routerMinusDirect.p90, 3),
        n(c.routerMinusDirect.p99, 3),
        n(c.parentOverFloor.p50),
        n(c.parentOverFloor.throughput),
        n(c.cpuPerRequestRatio),
        n(c.h2floorMinusDirect?.p50 ?? NaN, 3),
        n(c.h2floorMinusDirect?.p99 ?? NaN, 3),
        n(c.cpuOverH2Floor ?? NaN),
      ]),
    ),
    '',
  );
  if (dp.streaming && dp.streaming.cells.length > 0) out.push(...streamingSection(dp.streaming));
  if ((dp.closeCheck?.cells.length ?? 0) > 0) {
    out.push(`### Close mode ${dp.closeCheck.mode} (the ~2 KiB, 16-stream cell again, one round)`, '');
    out.push(
      'Envoy ends every ext_proc stream with a half-close immediately followed by RST_STREAM. Node\'s HTTP/2 server with its default limits ' +
        '(nghttp2\'s rapid-reset guard) answers more than 1,000 client resets per connection (then 33/s) with GOAWAY(INTERNAL_ERROR), failing every stream in flight on that connection. ' +
        (dp.maxRequestsPerConnection
          ? `Envoy avoids it by replacing the router connection every ${dp.maxRequestsPerConnection} streams (envoy/envoy.yaml), and so does the generator here; ` +
            'the router and the floor proxy do not pass the reset of a finished exchange on to their EPP call.'
          : 'The generator did not rotate its connections in this run (--max-requests-per-connection 0), so reset-mode errors above are mostly that limit.'),
      '',
    );
    out.push(
      table(
        ['set-up', 'close', 'req/s', 'p50 ms', 'p99 ms', 'errors'],
        dp.closeCheck.cells.map((c) => [c.setup, dp.closeCheck.mode, c.throughput.toFixed(0), n(c.latencyMs.p50, 3), n(c.latencyMs.p99, 3), c.errors ? `${c.errors} (${(c.firstError ?? '').slice(0, 60)})` : 0]),
      ),
      '',
    );
  }
  out.push(`### Concurrent open streams (held after the request path, ~2 KiB body)`, '');
  const mem = dp.routerMemoryAfterLoad;
  if (mem) {
    out.push(
      `Router memory after every load cell (its own admin /metrics): RSS ${n(mem.rssMb, 1)} MiB, V8 heap used ${n(mem.heapUsedMb, 1)} of ${n(mem.heapTotalMb, 1)} MiB, external (Buffers) ${n(mem.externalMb, 1)} MiB.`,
      '',
    );
  }
  out.push(`Router RSS right after start: ${n(dp.routerIdleRssMb, 1)} MiB${dp.profiled ? ' (profiled run: --cpu-prof inflates RSS and CPU)' : ''}. "fresh": right after start; "after-load": after every load cell above (the heap has grown and V8 keeps it).`, '');
  out.push(
    table(
      ['set-up', 'when', 'streams', 'RSS before MiB', 'RSS held MiB', 'KiB per stream', 'EPP RSS held MiB', 'open time ms'],
      dp.openStreams.map((o) => [o.setup, o.phase ?? 'after-load', o.streams, n(o.idleRssMb, 1), n(o.heldRssMb, 1), n(o.perStreamKb, 1), n(o.eppHeldRssMb, 1), o.openMs]),
    ),
    '',
  );
  return out;
}

function controlPlaneSection(cp: ControlPlaneResults, cpSvg: string): string[] {
  const out: string[] = [];
  out.push('## Control plane', '', `![control plane growth](${cpSvg})`, '');
  out.push(
    'Synthetic ClusterSets over 20 clusters: each HTTPRoute splits 50/50 between a local InferencePool and an InferencePoolImport exported by 8 remote clusters ' +
      '(one EPP Service per pool). Build = `buildSnapshot` (median after a warm-up build) with nothing reusable (new ClusterState objects); ' +
      'one-change build = `buildSnapshot` after one HTTPRoute edit, the other members\' states unchanged (their indexes and pool resolutions are reused); ' +
      'heap after full GC (snapshot plus the builder\'s caches for its states); change = one HTTPRoute edited, through the real `SnapshotStore` until its listener sees the new snapshot.',
    '',
  );
  out.push(
    table(
      ['HTTPRoutes', 'pools', 'imports', 'objects', 'candidates', 'build ms (median)', 'build ms (min-max)', 'one-change build ms (median)', 'snapshot heap MiB', 'input heap MiB', 'change -> serving ms', 'match+pick ns'],
      cp.build.map((b) => [
        b.routes, b.pools, b.imports, b.objects, b.candidates, n(b.buildMs.median, 1), `${n(b.buildMs.min, 1)}-${n(b.buildMs.max, 1)}`,
        b.incrementalBuildMs ? n(b.incrementalBuildMs.median, 1) : 'n/a', n(b.snapshotHeapMb), n(b.inputHeapMb), n(b.changeToServingMs.median, 1), n(b.matchNs, 0),
      ]),
    ),
    '',
    'Manifest reload in a running router (compiled, own process; debounce set to 0, production default 200 ms adds to this): ' +
      'one HTTPRoute file rewritten, timed until the router logs the new snapshot (it re-reads, parses and decodes all of that cluster\'s files).',
    '',
    table(
      ['HTTPRoutes', 'objects', 'router start ms', 'reload ms (median)', 'reload ms (max)', 'router RSS MiB'],
      cp.reload.map((p) => [p.routes, p.objects, p.startupMs, n(p.reloadMs.median, 1), n(p.reloadMs.max, 1), n(p.routerRssMb, 1)]),
    ),
    '',
    'Picker per request (`pickWith`, live signals for every candidate; "no signals" is `pick` as the data path calls it without a signal view). Fallback order is built only when a request fails over.',
    '',
    table(
      ['candidates', 'policy', 'ns per pick', 'fallback order ns'],
      cp.picker.map((p) => [p.candidates, p.policy, n(p.nsPerPick, 0), n(p.fallbacksNs, 0)]),
    ),
    '',
  );
  return out;
}

export function renderMarkdown(r: BenchResults, files: { svg: string; cpSvg: string }): string {
  const out: string[] = headLines(r);
  const dp = r.dataPath;
  if (dp.cells.length > 0 || dp.openStreams.length > 0) out.push(...dataPathSection(dp, files.svg));
  const cp = r.controlPlane;
  if (cp.build.length > 0 || cp.picker.length > 0 || cp.reload.length > 0) out.push(...controlPlaneSection(cp, files.cpSvg));
  if (r.pickerRole) out.push(...pickerRoleSection(r.pickerRole));
  if (r.fleet) out.push(...fleetSection(r.fleet));
  if (r.profiles.length > 0) {
    out.push('## CPU profiles (`--profile`)', '');
    for (const p of r.profiles) out.push(profileSection(p), '');
  }
  return out.join('\n');
}

/** The summary of a fleet-only run (--only-fleet). */
export function renderFleetMarkdown(r: BenchResults): string {
  if (!r.fleet) throw new Error('no fleet results to render');
  return [...headLines(r, 'mcip-router benchmark: fleet cell'), ...fleetSection(r.fleet)].join('\n');
}
