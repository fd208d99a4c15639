/**
 * Human and machine views of a snapshot: the routing table `mcip-router
 * --check` prints, and the plain JSON served at /debug/routes.
 */
import type { HeaderModifier, HTTPRouteMatch } from '../model/types.js';
import { pickerRouteLabel } from './picker-pools.js';
import type { BackendGroup, Candidate, Diagnostic, EppTarget, ExcludedObject, ParentTarget, PickerPool, RoutingSnapshot } from './types.js';

export function summarizeMatch(m: HTTPRouteMatch): string {
  const parts = [`${m.path.type} ${m.path.value}`];
  if (m.method !== undefined) parts.push(`method ${m.method}`);
  for (const h of m.headers) parts.push(`header ${h.name}${h.type === 'Exact' ? '=' : '~'}${h.value}`);
  for (const q of m.queryParams) parts.push(`query ${q.name}${q.type === 'Exact' ? '=' : '~'}${q.value}`);
  return parts.join(', ');
}

function describeEpp(e: EppTarget): string {
  const tls = !e.tls.enabled ? 'plaintext' : e.tls.caFile ? 'tls, CA file' : e.tls.insecureSkipVerify ? 'tls, unverified' : 'tls, system CAs';
  return `epp ${e.address} (${e.source} of Service ${e.service.namespace}/${e.service.name}, ${tls})`;
}

function describeParent(p: ParentTarget): string {
  return `parent ${p.address} (${p.source} of Gateway ${p.gateway.namespace}/${p.gateway.name})`;
}

export function describeCandidate(c: Candidate): string {
  const parts = [c.id, c.local ? 'local' : 'remote', `via ${c.via}`];
  if (c.epp !== undefined) parts.push(describeEpp(c.epp));
  if (c.parent !== undefined) parts.push(describeParent(c.parent));
  if (c.failureMode === 'FailOpen') parts.push('FailOpen');
  return parts.join('  ');
}

function percent(weight: number, total: number): string {
  return total > 0 ? `${((100 * weight) / total).toFixed(1)}%` : '0%';
}

function describeGroup(g: BackendGroup, total: number, lines: string[]): void {
  let head = `    -> ${g.ref.kind} ${g.ref.namespace}/${g.ref.name}  weight ${g.weight} (${percent(g.weight, total)})`;
  if (g.weight === 0) head += '  [weight 0: receives no traffic]';
  else if (g.candidates.length === 0) head += '  [NO USABLE POOL: its share of requests gets HTTP 500]';
  else if (g.candidates.length > 1) head += `  [split equally over ${g.candidates.length} pools]`;
  lines.push(head);
  if (g.import !== undefined) {
    lines.push(`         exporting clusters: ${g.import.exportingClusters.join(', ')} (source: ${g.import.source === 'derived' ? 'derived from exported pools' : 'InferencePoolImport status'})`);
  }
  for (const c of g.candidates) lines.push(`         ${describeCandidate(c)}`);
  for (const x of g.excluded) lines.push(`         EXCLUDED ${x.subject}: ${x.reason}: ${x.message}`);
}

function describeModifier(m: HeaderModifier): string {
  const parts = [...m.set.map((h) => `set ${h.name}=${h.value}`), ...m.add.map((h) => `add ${h.name}=${h.value}`), ...m.remove.map((n) => `remove ${n}`)];
  return parts.join(', ');
}

function describeDiagnostic(d: Diagnostic): string {
  return `  ${d.severity.padEnd(7)} ${d.subject}${d.path !== undefined ? ` [${d.path}]` : ''}: ${d.reason}: ${d.message}`;
}

function describeExcluded(x: ExcludedObject): string {
  const field = x.field !== '' ? ` [${x.field}]` : '';
  const origin = x.origin !== undefined ? ` (${x.origin})` : '';
  return `${x.cluster}: ${x.kind} ${x.namespace}/${x.name}${field}: ${x.reason}: ${x.message}${origin}`;
}

/** A multi-cluster pool of the Endpoint Picker role: its port, answer, gateways and backends. */
function describePickerPool(p: PickerPool, lines: string[]): void {
  const gateways = p.gateways.map((g) => (g.controller === undefined ? g.gateway : `${g.gateway} (${g.controller})`)).join(', ');
  lines.push(`${pickerRouteLabel(p.pool.namespace, p.pool.name)}  picker port ${p.port}  answer ${p.answer}  failureMode ${p.failureMode}  gateways: ${gateways || 'none reported'}`);
  if (p.rule.totalWeight === 0) lines.push('    (every backend has weight 0: every request gets HTTP 500)');
  for (const g of p.rule.backends) describeGroup(g, p.rule.totalWeight, lines);
  lines.push('');
}

function backendsJson(backends: readonly BackendGroup[]): unknown[] {
  return backends.map((g) => ({
    ref: { ...g.ref },
    weight: g.weight,
    candidates: g.candidates.map((c) => c.id),
    excluded: g.excluded.map((x) => ({ ...x })),
    ...(g.import !== undefined ? { import: { source: g.import.source, exportingClusters: [...g.import.exportingClusters] } } : {}),
  }));
}

/** The routing table: routes -> rules -> backendRefs -> candidates/exclusions, then diagnostics. */
export function formatRoutingTable(snapshot: RoutingSnapshot, diagnostics: readonly Diagnostic[]): string {
  const lines: string[] = [];
  lines.push(`Routing snapshot v${snapshot.version}: cluster ${snapshot.localCluster}, mode ${snapshot.mode}, built ${snapshot.builtAt}`);
  const clusters = snapshot.clusters.map((c) => `${c.name} (${c.objects} objects, revision ${c.revision}${c.stale ? ', STALE' : ''})`);
  lines.push(`Clusters: ${clusters.length > 0 ? clusters.join(', ') : 'none loaded'}`);
  lines.push('');
  if (snapshot.routes.length === 0) {
    lines.push('No HTTPRoutes are attached to the served Gateways: every request gets 404.');
  }
  for (const r of snapshot.routes) {
    const hosts = r.hostnames.length > 0 ? r.hostnames.join(', ') : '*';
    lines.push(`HTTPRoute ${r.route.namespace}/${r.route.name}  hostnames: ${hosts}  parents: ${r.parents.join(', ')}`);
    if (r.rules.length === 0) lines.push('  (no rules)');
    for (const rule of r.rules) {
      const name = rule.name !== undefined ? ` "${rule.name}"` : '';
      lines.push(`  rule[${rule.index}]${name}: ${rule.matches.map(summarizeMatch).join(' | ')}`);
      if (rule.unsupported !== undefined) {
        lines.push(`    REFUSED: uses ${rule.unsupported.map((u) => `${u.feature} [${u.path}]`).join(', ')}, which the router does not honour: every matching request gets HTTP 500`);
      } else if (rule.backends.length === 0) lines.push('    (no backendRefs: every matching request gets HTTP 500)');
      if (rule.requestHeaderModifier !== undefined) lines.push(`    request headers: ${describeModifier(rule.requestHeaderModifier.modifier)}`);
      else if (rule.totalWeight === 0) lines.push('    (every backendRef has weight 0: every matching request gets HTTP 500)');
      for (const g of rule.backends) describeGroup(g, rule.totalWeight, lines);
    }
    lines.push('');
  }
  for (const p of snapshot.pickerPools?.values() ?? []) describePickerPool(p, lines);
  if (snapshot.excludedObjects.length > 0) {
    lines.push(`Excluded objects: ${snapshot.excludedObjects.length}`);
    for (const x of snapshot.excludedObjects) lines.push(`  ${describeExcluded(x)}`);
    lines.push('');
  }
  const counts = { error: 0, warning: 0, info: 0 };
  for (const d of diagnostics) counts[d.severity]++;
  lines.push(`Diagnostics: ${counts.error} error(s), ${counts.warning} warning(s), ${counts.info} info`);
  for (const d of diagnostics) lines.push(describeDiagnostic(d));
  return `${lines.join('\n')}\n`;
}

export interface SnapshotJson {
  readonly version: number;
  readonly builtAt: string;
  readonly localCluster: string;
  readonly mode: string;
  readonly clusters: RoutingSnapshot['clusters'];
  readonly routes: readonly unknown[];
  /** The Endpoint Picker role's multi-cluster pools, in pool name order. */
  readonly pickerPools: readonly unknown[];
  /** Every candidate by id; routes refer to candidates by id. */
  readonly candidates: Readonly<Record<string, Candidate>>;
  readonly diagnostics: readonly Diagnostic[];
  readonly excludedObjects: readonly ExcludedObject[];
}

/** A JSON-serialisable view of the snapshot for /debug/routes (no Maps, no compiled matchers). */
export function snapshotToJson(snapshot: RoutingSnapshot): SnapshotJson {
  return {
    version: snapshot.version,
    builtAt: snapshot.builtAt,
    localCluster: snapshot.localCluster,
    mode: snapshot.mode,
    clusters: snapshot.clusters.map((c) => ({ ...c })),
    routes: snapshot.routes.map((r) => ({
      route: { ...r.route },
      hostnames: [...r.hostnames],
      parents: [...r.parents],
      attachments: r.attachments.map((a) => ({ ...a, listeners: [...a.listeners] })),
      ...(r.creationTimestamp !== undefined ? { creationTimestamp: r.creationTimestamp } : {}),
      rules: r.rules.map((rule) => ({
        index: rule.index,
        ...(rule.name !== undefined ? { name: rule.name } : {}),
        matches: rule.matches,
        ...(rule.unsupported !== undefined ? { unsupported: rule.unsupported.map((u) => ({ ...u })) } : {}),
        ...(rule.requestHeaderModifier !== undefined ? { requestHeaderModifier: rule.requestHeaderModifier.modifier } : {}),
        totalWeight: rule.totalWeight,
        backends: backendsJson(rule.backends),
      })),
    })),
    pickerPools: [...(snapshot.pickerPools?.values() ?? [])].map((p) => ({
      route: pickerRouteLabel(p.pool.namespace, p.pool.name),
      port: p.port,
      pool: { ...p.pool },
      answer: p.answer,
      failureMode: p.failureMode,
      gateways: p.gateways.map((g) => ({ ...g })),
      totalWeight: p.rule.totalWeight,
      backends: backendsJson(p.rule.backends),
    })),
    candidates: Object.fromEntries(snapshot.candidates),
    diagnostics: snapshot.diagnostics.map((d) => ({ ...d })),
    excludedObjects: snapshot.excludedObjects.map((x) => ({ ...x })),
  };
}
