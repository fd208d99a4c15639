/**
 * End-to-end fixtures: a ClusterSet written as real YAML manifests and a real
 * router config in a temp dir, simulated EPPs on loopback, and helpers to run a
 * whole router (in process or as the CLI) against them.
 */
import { mkdtempSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { withTestTransport } from '../harness/extproc-transport.js';
import { startSimulatedEpp, type SimulatedEpp } from '../harness/simulated-epp.js';

export const GATEWAY = { namespace: 'default', name: 'inference-gateway' };
const NS = 'default';

export function gatewayYaml(name = GATEWAY.name, addresses: string[] = []): string {
  return stringify({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { name, namespace: NS },
    spec: {
      gatewayClassName: 'mcip',
      listeners: [{ name: 'http', port: 80, protocol: 'HTTP', allowedRoutes: { namespaces: { from: 'All' } } }],
    },
    ...(addresses.length ? { status: { addresses: addresses.map((value) => ({ type: 'IPAddress', value })) } } : {}),
  });
}

export function poolYaml(
  name: string,
  o: { exported?: boolean; failureMode?: 'FailOpen' | 'FailClose'; parentGateway?: string } = {},
): string {
  return (
    stringify({
      apiVersion: 'inference.networking.k8s.io/v1',
      kind: 'InferencePool',
      metadata: {
        name,
        namespace: NS,
        ...(o.exported ? { annotations: { 'inference.networking.x-k8s.io/export': 'ClusterSet' } } : {}),
      },
      spec: {
        selector: { matchLabels: { app: name } },
        targetPorts: [{ number: 8000 }],
        endpointPickerRef: { name: `${name}-epp`, port: { number: 9002 }, ...(o.failureMode ? { failureMode: o.failureMode } : {}) },
      },
      ...(o.parentGateway
        ? { status: { parents: [{ parentRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: o.parentGateway }, conditions: [] }] } }
        : {}),
    }) +
    '---\n' +
    stringify({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: `${name}-epp`, namespace: NS },
      spec: { type: 'ClusterIP', clusterIP: '10.96.0.10', ports: [{ name: 'grpc', port: 9002 }] },
    })
  );
}

export function importYaml(name: string, exportingClusters: string[]): string {
  return stringify({
    apiVersion: 'inference.networking.x-k8s.io/v1alpha1',
    kind: 'InferencePoolImport',
    metadata: { name, namespace: NS },
    status: { controllers: [{ name: 'mcip.example.com/export-controller', exportingClusters: exportingClusters.map((n) => ({ name: n })) }] },
  });
}

export type BackendSpec = { kind: 'InferencePool' | 'InferencePoolImport'; name: string; weight?: number };

export function routeYaml(name: string, hostname: string, backends: BackendSpec[], pathPrefix = '/v1'): string {
  return stringify({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name, namespace: NS },
    spec: {
      parentRefs: [{ name: GATEWAY.name }],
      hostnames: [hostname],
      rules: [
        {
          matches: [{ path: { type: 'PathPrefix', value: pathPrefix } }],
          backendRefs: backends.map((b) => ({
            group: b.kind === 'InferencePool' ? 'inference.networking.k8s.io' : 'inference.networking.x-k8s.io',
            kind: b.kind,
            name: b.name,
            ...(b.weight !== undefined ? { weight: b.weight } : {}),
          })),
        },
      ],
    },
  });
}

export interface MemberSpec {
  readonly name: string;
  /** file name -> YAML text */
  readonly files: Record<string, string>;
  /** EPP Service name -> address (the simulated EPP's). */
  readonly epps?: Record<string, string>;
  /** Gateway name -> ip:port (Parent mode). */
  readonly parents?: Record<string, string>;
  /** Merged into the member's `epp` config (plaintext, metrics off by default). */
  readonly epp?: Record<string, unknown>;
}

export interface ClusterSetDir {
  readonly dir: string;
  readonly configFile: string;
  /** Replaces a manifest file atomically (write + rename), as editors and ConfigMap updates do. */
  write(cluster: string, file: string, text: string): void;
}

export function writeClusterSet(
  members: readonly MemberSpec[],
  o: { mode?: 'Endpoint' | 'Parent'; local?: string; extra?: Record<string, unknown>; listen?: { extProc: string; admin: string } } = {},
): ClusterSetDir {
  const dir = mkdtempSync(join(tmpdir(), 'mcip-e2e-'));
  const write = (cluster: string, file: string, text: string): void => {
    const path = join(dir, cluster, file);
    writeFileSync(`${path}.tmp`, text);
    renameSync(`${path}.tmp`, path);
  };
  for (const m of members) {
    mkdirSync(join(dir, m.name));
    for (const [file, text] of Object.entries(m.files)) write(m.name, file, text);
  }
  const config = {
    clusterName: o.local ?? members[0]?.name,
    mode: o.mode ?? 'Endpoint',
    listen: o.listen ?? { extProc: '127.0.0.1:0', admin: '127.0.0.1:0' },
    gateways: [GATEWAY],
    clusters: members.map((m) => ({
      name: m.name,
      manifests: { paths: [m.name] },
      epp: { tls: { enabled: false }, metrics: { enabled: false }, ...m.epp },
      addressOverrides: {
        services: Object.entries(m.epps ?? {}).map(([name, address]) => ({ namespace: NS, name, address })),
        gateways: Object.entries(m.parents ?? {}).map(([name, address]) => ({ namespace: NS, name, address })),
      },
    })),
    manifests: { debounceMs: 50, pollIntervalMs: 250 },
    log: { level: 'silent' },
    ...o.extra,
  };
  const configFile = join(dir, 'router.yaml');
  writeFileSync(configFile, stringify(withTestTransport(config)));
  return { dir, configFile, write };
}

/**
 * One simulated EPP per name, each picking its own single endpoint so the destination names the pool;
 * the names in `stock` behave like stock llm-d EPPs (no Health on the ext_proc port).
 */
export async function startEpps(endpoints: Record<string, string>, delayMs = 0, stock: readonly string[] = []): Promise<Record<string, SimulatedEpp>> {
  const out: Record<string, SimulatedEpp> = {};
  for (const [name, endpoint] of Object.entries(endpoints)) {
    out[name] = await startSimulatedEpp({ endpoints: [endpoint], delayMs, stock: stock.includes(name) });
  }
  return out;
}

export async function stopAll(epps: Record<string, SimulatedEpp>): Promise<void> {
  await Promise.all(Object.values(epps).map((e) => e.stop()));
}

/** A realistic OpenAI-style completion body. */
export function completionBody(model = 'llama'): Buffer {
  return Buffer.from(JSON.stringify({ model, prompt: 'Say hello', max_tokens: 16 }));
}

/** The GIE conformance tolerance for an observed share. */
export function tolerance(p: number, n: number): number {
  return Math.max(0.1, 4.5 * Math.sqrt((p * (1 - p)) / n));
}

/** Runs `count` tasks with at most `concurrency` in flight. */
export async function inBatches<T>(count: number, concurrency: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array(count);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      const i = next++;
      results[i] = await task(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  return results;
}
