/**
 * A push/pull ClusterSet of API-server stand-ins: one hub, one server per member,
 * and export agents in the members. The hub enforces the RBAC of
 * deploy/rbac/export-agent-hub.yaml (one copy per member), as a real hub would:
 * each agent's hub token is its member's ServiceAccount there; the manifest's
 * ResourceQuotas are applied too.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { routerConfigSchema, type RouterConfig } from '../../src/config/schema.js';
import { namedConfig } from '../../src/config/local-name.js';
import type { ExportAgentHandle } from '../../src/controller/export-agent.js';
import { startExportAgentFromConfig } from '../../src/controller/export-agent-runtime.js';
import { EXPORT_ANNOTATION } from '../../src/model/types.js';
import { KubeApiServer, writeKubeconfig, type ObjectCountQuota, type RequestRecord } from '../harness/kube-apiserver.js';
import { pool, silent } from '../sources/kubernetes/kube-fixtures.js';

export const AGENT = 'mcip-router.dev/export-agent';
export const HUB_RBAC = 'deploy/rbac/export-agent-hub.yaml';

type Rule = { apiGroups: string[]; resources: string[]; verbs: string[] };
type Doc = { kind: string; metadata: { name: string; namespace?: string }; rules?: Rule[]; roleRef?: { kind: string; name: string }; subjects?: { kind: string; name: string; namespace: string }[] };

/** "resource[/sub] verb" as RBAC names the request. */
export function verbOf(r: RequestRecord): string {
  return r.method === 'GET' ? (r.watch ? 'watch' : r.name === undefined ? 'list' : 'get') : (({ POST: 'create', DELETE: 'delete', PATCH: 'patch', PUT: 'update' }) as Record<string, string>)[r.method] ?? '?';
}

/**
 * An RBAC authorizer from manifests (Roles, ClusterRoles and their bindings to
 * ServiceAccounts): the token is "system:serviceaccount:NS:NAME".
 */
export function rbacAuthorizer(yamlText: string): (token: string, r: RequestRecord) => boolean {
  const docs = parseAllDocuments(yamlText).map((d) => d.toJSON() as Doc);
  const role = (kind: string, name: string, ns?: string) => docs.find((d) => d.kind === kind && d.metadata.name === name && (kind === 'ClusterRole' || d.metadata.namespace === ns));
  const grants: { user: string; namespace?: string; resource: string; verb: string }[] = [];
  for (const b of docs.filter((d) => d.kind === 'RoleBinding' || d.kind === 'ClusterRoleBinding')) {
    const r = b.roleRef && role(b.roleRef.kind, b.roleRef.name, b.metadata.namespace);
    for (const s of b.subjects ?? []) {
      for (const rule of r?.rules ?? []) {
        for (const resource of rule.resources) {
          for (const verb of rule.verbs) {
            grants.push({ user: `system:serviceaccount:${s.namespace}:${s.name}`, ...(b.kind === 'RoleBinding' ? { namespace: b.metadata.namespace } : {}), resource, verb });
          }
        }
      }
    }
  }
  return (token, r) => {
    const resource = `${r.plural ?? ''}${r.subresource ? `/${r.subresource}` : ''}`;
    const verb = verbOf(r);
    return grants.some((g) => g.user === token && g.resource === resource && g.verb === verb && (g.namespace === undefined || g.namespace === r.namespace));
  };
}

/** The ResourceQuotas' object counts in manifests. */
export function resourceQuotas(yamlText: string): ObjectCountQuota[] {
  type Quota = { kind: string; metadata: { name: string; namespace: string }; spec?: { hard?: Record<string, string | number> } };
  return parseAllDocuments(yamlText)
    .map((d) => d.toJSON() as Quota)
    .filter((d) => d?.kind === 'ResourceQuota')
    .map((d) => ({ name: d.metadata.name, namespace: d.metadata.namespace, hard: Object.fromEntries(Object.entries(d.spec?.hard ?? {}).map(([k, v]) => [k, Number(v)])) }));
}

export const hubToken = (member: string): string => `system:serviceaccount:mcip-member-${member}:mcip-export-agent`;

export class PushPullEnv {
  readonly hub = new KubeApiServer();
  readonly servers = new Map<string, KubeApiServer>();
  private readonly files = new Map<string, { member: string; hub: string }>();
  private readonly agents: ExportAgentHandle[] = [];
  dir = '';

  constructor(readonly names: readonly string[]) {}

  async start(): Promise<this> {
    this.dir = await mkdtemp(join(tmpdir(), 'mcip-pushpull-'));
    await this.hub.start();
    const rbac = readFileSync(HUB_RBAC, 'utf8');
    const copies = this.names.map((n) => rbac.replaceAll('cluster-a', n)).join('\n---\n');
    this.hub.authorize(rbacAuthorizer(copies));
    for (const q of resourceQuotas(copies)) this.hub.quota(q);
    for (const name of this.names) {
      const server = new KubeApiServer();
      await server.start();
      this.servers.set(name, server);
      this.files.set(name, {
        member: await writeKubeconfig(this.dir, { server: server.url }, `${name}.kubeconfig`),
        hub: await writeKubeconfig(this.dir, { server: this.hub.url, token: hubToken(name) }, `${name}-hub.kubeconfig`),
      });
    }
    return this;
  }

  server(name: string): KubeApiServer {
    const s = this.servers.get(name);
    if (!s) throw new Error(`no member ${name}`);
    return s;
  }

  async agent(member: string, identity = `${member}-agent-1`, overrides: Record<string, unknown> = {}): Promise<ExportAgentHandle> {
    const h = await startExportAgentFromConfig(this.config(member, identity, overrides), { logger: silent });
    this.agents.push(h);
    return h;
  }

  /** The config of member's agent: its own kubeconfig, its hub kubeconfig (its hub ServiceAccount's token), short timings. */
  config(member: string, identity = `${member}-agent-1`, overrides: Record<string, unknown> = {}): RouterConfig {
    const f = this.files.get(member)!;
    return namedConfig(routerConfigSchema.parse({
      clusterName: member,
      gateways: [{ namespace: 'default', name: 'gw' }],
      clusters: [{ name: member, kubernetes: { kubeconfig: f.member, requestTimeoutMs: 500 } }],
      kubernetes: { coalesceMs: 10, coalesceMaxMs: 100, initialSyncTimeoutMs: 1000, backoffInitialMs: 50, backoffMaxMs: 200 },
      exportAgent: {
        hub: { kubeconfig: f.hub, requestTimeoutMs: 500 },
        heartbeatMs: 200,
        staleAfterMs: 1000,
        withdrawalGraceMs: 400,
        leaderElection: { leaseNamespace: 'mcip', leaseDurationMs: 1000, renewDeadlineMs: 600, retryPeriodMs: 100, identity },
        ...overrides,
      },
    }));
  }

  exportPool(member: string, name: string, namespace = 'default'): void {
    this.server(member).create('inferencepools', pool(name, namespace, `${name}-epp`, { annotations: { [EXPORT_ANNOTATION]: 'ClusterSet' } }));
  }

  unexport(member: string, name: string, namespace = 'default'): void {
    const s = this.server(member);
    const cur = s.get('inferencepools', namespace, name)!;
    const { [EXPORT_ANNOTATION]: _gone, ...annotations } = ((cur.metadata as { annotations?: Record<string, string> }).annotations ?? {});
    s.update('inferencepools', { ...cur, metadata: { ...cur.metadata, annotations } });
  }

  /** The exporting clusters of the agent's entry on member's import, or undefined without the import or entry. */
  importedFrom(member: string, name: string, namespace = 'default'): string[] | undefined {
    const imp = this.server(member).get('inferencepoolimports', namespace, name);
    const ours = (imp?.status as { controllers?: { name: string; exportingClusters?: { name: string }[] }[] } | undefined)?.controllers?.find((c) => c.name === AGENT);
    return ours?.exportingClusters?.map((c) => c.name);
  }

  exported(member: string, name: string, namespace = 'default'): { status: string; reason: string; message: string } | undefined {
    const p = this.server(member).get('inferencepools', namespace, name);
    const parents = (p?.status as { parents?: { controllerName?: string; conditions: { type: string; status: string; reason: string; message: string }[] }[] } | undefined)?.parents ?? [];
    return parents.find((x) => x.controllerName === AGENT)?.conditions.find((c) => c.type === 'Exported');
  }

  async close(): Promise<void> {
    await Promise.all(this.agents.splice(0).map((a) => a.stop()));
    await Promise.all([this.hub, ...this.servers.values()].map((s) => s.close()));
    if (this.dir) await rm(this.dir, { recursive: true, force: true });
  }
}
