/**
 * The ClusterSet the data-path benchmark routes through, written as real
 * manifests plus a router config in a temp dir (test/e2e/clusterset.ts YAML
 * builders). Three members; the request's route splits 60/10/30 between two
 * local pools and an import exported by cluster-b and cluster-c: four
 * candidates, each with its own EPP port on the fast EPP, live gRPC health
 * checks and metrics scrapes, plus 20 filler routes so matching is not trivial.
 * Parent mode: the route goes to the import only (both candidates remote, via
 * their parent Gateway: the router answers itself).
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { GATEWAY, gatewayYaml, importYaml, poolYaml, routeYaml, type BackendSpec } from '../../test/e2e/clusterset.js';
import { BENCH_AUTHORITY } from './payloads.js';

export interface EppPorts {
  /** ext_proc (and gRPC health) ports of the fast EPP: [a/llm, a/llm-canary, b/llm, c/llm]. */
  readonly ports: readonly number[];
  readonly metricsPort: number;
  /** TCP port standing in for the remote parent Gateways. */
  readonly gatewayPort: number;
}

export const BENCH_POOLS = ['llm', 'llm-canary'] as const;
export const EPP_PORT_COUNT = 4;
/**
 * The share of the bench route's streams each EPP port gets in Endpoint mode
 * (a/llm 60, a/llm-canary 10, the import's 30 split over b and c): the floor
 * proxies spread their streams over the same ports in the same shares.
 */
export const EPP_PORT_WEIGHTS: readonly number[] = [60, 10, 15, 15];
const FILLER_ROUTES = 20;
const NS = 'default';

export function writeTopology(
  mode: 'Endpoint' | 'Parent',
  epp: EppPorts,
  transport?: 'grpc-js' | 'http2',
  /** More top-level router config (e.g. `tracing`). */
  extra: Record<string, unknown> = {},
  /** More manifest files of the local cluster (e.g. multi-cluster pools). */
  localFiles: Record<string, string> = {},
): { dir: string; configFile: string } {
  const dir = mkdtempSync(join(tmpdir(), `mcip-bench-${mode.toLowerCase()}-`));
  const port = (i: number): string => `127.0.0.1:${epp.ports[i % epp.ports.length]}`;
  const benchBackends: BackendSpec[] =
    mode === 'Endpoint'
      ? [
          { kind: 'InferencePool', name: 'llm', weight: 60 },
          { kind: 'InferencePool', name: 'llm-canary', weight: 10 },
          { kind: 'InferencePoolImport', name: 'llm', weight: 30 },
        ]
      : [{ kind: 'InferencePoolImport', name: 'llm', weight: 1 }];
  const routes = [routeYaml('bench', BENCH_AUTHORITY, benchBackends, '/v1')];
  for (let i = 0; i < FILLER_ROUTES; i++) {
    routes.push(routeYaml(`filler-${i}`, `filler-${i}.example`, [{ kind: 'InferencePool', name: 'llm', weight: 1 }], '/v1'));
  }
  const files: Record<string, Record<string, string>> = {
    'cluster-a': {
      'gateway.yaml': gatewayYaml(),
      'pools.yaml': [poolYaml('llm'), poolYaml('llm-canary')].join('---\n'),
      'imports.yaml': importYaml('llm', ['cluster-b', 'cluster-c']),
      'routes.yaml': routes.join('---\n'),
      ...localFiles,
    },
    'cluster-b': { 'gateway.yaml': gatewayYaml(), 'pools.yaml': poolYaml('llm', { exported: true, parentGateway: GATEWAY.name }) },
    'cluster-c': { 'gateway.yaml': gatewayYaml(), 'pools.yaml': poolYaml('llm', { exported: true, parentGateway: GATEWAY.name }) },
  };
  const epps: Record<string, Record<string, string>> = {
    'cluster-a': { 'llm-epp': port(0), 'llm-canary-epp': port(1) },
    'cluster-b': { 'llm-epp': port(2) },
    'cluster-c': { 'llm-epp': port(3) },
  };
  for (const [cluster, fs] of Object.entries(files)) {
    mkdirSync(join(dir, cluster));
    for (const [name, text] of Object.entries(fs)) writeFileSync(join(dir, cluster, name), text);
  }
  const config = {
    clusterName: 'cluster-a',
    mode,
    listen: { extProc: '127.0.0.1:0', admin: '127.0.0.1:0' },
    ...(transport === undefined ? {} : { extProc: { transport } }),
    gateways: [GATEWAY],
    clusters: Object.keys(files).map((name) => ({
      name,
      manifests: { paths: [name] },
      epp: {
        tls: { enabled: false },
        // Live signals, as in production (faster than the defaults so they matter during short runs).
        health: { intervalMs: 500, timeoutMs: 250 },
        metrics: { enabled: true, port: epp.metricsPort, intervalMs: 1000, timeoutMs: 500 },
      },
      parentProbe: { mode: 'tcp', intervalMs: 500, timeoutMs: 250 },
      addressOverrides: {
        services: Object.entries(epps[name] ?? {}).map(([svc, address]) => ({ namespace: NS, name: svc, address })),
        gateways: name === 'cluster-a' ? [] : [{ namespace: NS, name: GATEWAY.name, address: `127.0.0.1:${epp.gatewayPort}` }],
      },
    })),
    log: { level: 'info' },
    ...extra,
  };
  const configFile = join(dir, 'router.yaml');
  writeFileSync(configFile, stringify(config));
  return { dir, configFile };
}
