/** A ClusterSet of API-server stand-ins (one per member) and export-controller replicas on it. */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { parseAllDocuments } from 'yaml';
import { routerConfigSchema, type RouterConfig } from '../../src/config/schema.js';
import { namedConfig } from '../../src/config/local-name.js';
import type { ExportControllerHandle } from '../../src/controller/export-controller.js';
import { startExportFromConfig } from '../../src/controller/export-runtime.js';
import { EXPORT_ANNOTATION } from '../../src/model/types.js';
import { KubeApiServer, writeKubeconfig } from '../harness/kube-apiserver.js';
import { expect } from 'vitest';
import { pool, silent, waitFor } from '../sources/kubernetes/kube-fixtures.js';

export const EXPORTER = 'mcip-router.dev/export-controller';

/** Every member's kubernetes.requestTimeoutMs (default 500) and the initial sync bound (default 1000). */
export interface MemberTiming {
  readonly requestTimeoutMs?: number;
  readonly initialSyncTimeoutMs?: number;
}

export interface ReplicaOptions {
  readonly timing?: MemberTiming;
  readonly logger?: Logger;
  /** Registers the mcip_export_* metrics here. */
  readonly registry?: Registry;
}

export type Entry = { name: string; exportingClusters?: { name: string }[]; conditions?: { type: string; status: string; reason: string; message: string }[] };
export type Parent = { parentRef: Record<string, string>; controllerName: string; conditions: { type: string; status: string; reason: string; message: string }[] };

/** What GIE v1.0.x's InferencePool CRD keeps of a status.parents[] entry (no controllerName); for KubeApiServer.pruneStatus. */
export function pruneGieV10PoolStatus(status: unknown): unknown {
  const s = status as { parents?: Record<string, unknown>[] };
  if (!Array.isArray(s.parents)) return s;
  return { ...s, parents: s.parents.map(({ parentRef, conditions }) => ({ parentRef, conditions })) };
}

export class ClusterSetEnv {
  readonly servers = new Map<string, KubeApiServer>();
  readonly kubeconfigs = new Map<string, string>();
  dir = '';
  private readonly replicas: ExportControllerHandle[] = [];

  constructor(readonly names: readonly string[]) {}

  async start(): Promise<this> {
    this.dir = await mkdtemp(join(tmpdir(), 'mcip-export-'));
    for (const name of this.names) {
      const server = new KubeApiServer();
      await server.start();
      this.servers.set(name, server);
      this.kubeconfigs.set(name, await writeKubeconfig(this.dir, { server: server.url }, `${name}.kubeconfig`));
    }
    return this;
  }

  server(name: string): KubeApiServer {
    const s = this.servers.get(name);
    if (!s) throw new Error(`no member ${name}`);
    return s;
  }

  config(identity: string, overrides: Record<string, unknown> = {}, timing: MemberTiming = {}): RouterConfig {
    return namedConfig(routerConfigSchema.parse({
      clusterName: this.names[0],
      gateways: [{ namespace: 'default', name: 'gw' }],
      clusters: this.names.map((name) => ({ name, kubernetes: { kubeconfig: this.kubeconfigs.get(name), requestTimeoutMs: timing.requestTimeoutMs ?? 500 } })),
      kubernetes: { coalesceMs: 10, coalesceMaxMs: 100, initialSyncTimeoutMs: timing.initialSyncTimeoutMs ?? 1000, backoffInitialMs: 50, backoffMaxMs: 200 },
      exportController: {
        enabled: true,
        withdrawalGraceMs: 400,
        resyncMs: 60_000,
        leaderElection: { leaseNamespace: 'mcip', leaseDurationMs: 1000, renewDeadlineMs: 600, retryPeriodMs: 100, identity },
        ...overrides,
      },
    }));
  }

  async replica(identity = 'replica-1', overrides: Record<string, unknown> = {}, o: ReplicaOptions = {}): Promise<ExportControllerHandle> {
    const h = await startExportFromConfig(this.config(identity, overrides, o.timing), { logger: o.logger ?? silent, ...(o.registry ? { registry: o.registry } : {}) });
    this.replicas.push(h);
    return h;
  }

  exportPool(member: string, name: string, namespace = 'default', value = 'ClusterSet'): void {
    this.server(member).create('inferencepools', pool(name, namespace, `${name}-epp`, { annotations: { [EXPORT_ANNOTATION]: value } }));
  }

  /** Sets (or with undefined removes) the export annotation of an existing pool. */
  annotate(member: string, name: string, value: string | undefined, namespace = 'default'): void {
    const s = this.server(member);
    const cur = s.get('inferencepools', namespace, name)!;
    const meta = cur.metadata as { annotations?: Record<string, string> };
    const annotations = { ...(meta.annotations ?? {}) };
    if (value === undefined) delete annotations[EXPORT_ANNOTATION];
    else annotations[EXPORT_ANNOTATION] = value;
    s.update('inferencepools', { ...cur, metadata: { ...cur.metadata, annotations } });
  }

  controllers(member: string, name: string, namespace = 'default'): Entry[] | undefined {
    const imp = this.server(member).get('inferencepoolimports', namespace, name);
    if (!imp) return undefined;
    return ((imp.status as { controllers?: Entry[] } | undefined)?.controllers ?? []) as Entry[];
  }

  ours(member: string, name: string, namespace = 'default'): Entry | undefined {
    return this.controllers(member, name, namespace)?.find((c) => c.name === EXPORTER);
  }

  exportingClusters(member: string, name: string): string[] | undefined {
    return this.ours(member, name)?.exportingClusters?.map((c) => c.name);
  }

  parents(member: string, name: string, namespace = 'default'): Parent[] {
    const p = this.server(member).get('inferencepools', namespace, name);
    return ((p?.status as { parents?: Parent[] } | undefined)?.parents ?? []) as Parent[];
  }

  exported(member: string, name: string, namespace = 'default'): Parent['conditions'][number] | undefined {
    return this.parents(member, name, namespace).find((p) => p.controllerName === EXPORTER)?.conditions.find((c) => c.type === 'Exported');
  }

  async close(): Promise<void> {
    await Promise.all(this.replicas.splice(0).map((r) => r.stop()));
    await Promise.all([...this.servers.values()].map((s) => s.close()));
    if (this.dir) await rm(this.dir, { recursive: true, force: true });
  }
}

/** "resource[/subresource] verb" for every request a member's API server saw (Leases aside), as RBAC names them. */
export function rbacRequests(server: KubeApiServer): Set<string> {
  const out = new Set<string>();
  for (const r of server.requests) {
    if (!r.plural || r.plural === 'leases') continue;
    const verb =
      r.method === 'GET' ? (r.watch ? 'watch' : r.name === undefined ? 'list' : 'get') : ({ POST: 'create', DELETE: 'delete', PATCH: 'patch', PUT: 'update' } as Record<string, string>)[r.method];
    out.add(`${r.plural}${r.subresource ? `/${r.subresource}` : ''} ${verb}`);
  }
  return out;
}

/** The same for what a ClusterRole in a YAML file grants. */
export function rbacGrants(file: string, roleName: string): Set<string> {
  const role = parseAllDocuments(readFileSync(file, 'utf8'))
    .map((d) => d.toJSON() as { kind: string; metadata: { name: string }; rules: { resources: string[]; verbs: string[] }[] })
    .find((o) => o.kind === 'ClusterRole' && o.metadata.name === roleName);
  return new Set(role?.rules.flatMap((r) => r.resources.flatMap((res) => r.verbs.map((v) => `${res} ${v}`))) ?? []);
}

/**
 * Waits for `cond` and asserts it took under 1 s of the process's own time: the time the
 * event loop was held up (a loaded machine, another test's work) is measured and left out.
 */
export async function withinOneSecond(cond: () => unknown, what: string): Promise<void> {
  let lag = 0;
  let last = performance.now();
  const meter = setInterval(() => {
    const now = performance.now();
    lag += Math.max(0, now - last - 10);
    last = now;
  }, 10);
  const t0 = performance.now();
  try {
    await waitFor(() => cond() || undefined, 15_000, what);
  } finally {
    clearInterval(meter);
  }
  const elapsed = performance.now() - t0;
  expect(elapsed - lag, `${what}: ${Math.round(elapsed)} ms, the event loop held up ${Math.round(lag)} ms of it`).toBeLessThan(1000);
}
