/**
 * Where every part of the demo listens: fixed offsets from one base port, so the
 * default layout is easy to curl (front door on 8080) and `--base-port N` moves
 * the whole set at once.
 *
 *   N       front door (stands in for Envoy's :8080 listener)
 *   N+1     mcip-router ext_proc (gRPC)
 *   N+2     mcip-router admin (/metrics, /debug/routes, /debug/signals)
 *   N+3     mcip-router picker port (--gateway byo only: the Endpoint Picker of the
 *           multi-cluster InferencePool, ext_proc over TLS)
 *   N+10    cluster-a: simulated EPP (ext_proc + gRPC health)
 *   N+11    cluster-a: the EPP's Prometheus pool metrics
 *   N+12..  cluster-a: simulated model server pods
 *   N+20..  cluster-b: the same, 10 ports higher
 *
 * Also how to check that a port is free and how to listen on one.
 */
import { createServer, type Server } from 'node:net';
import type { GatewayShape } from './gateway-shape.js';

export const HOST = '127.0.0.1';
/** Clusters of the ClusterSet, as named in examples/: cluster-a imports, cluster-b exports. */
export const CLUSTERS = ['cluster-a', 'cluster-b'] as const;
export type ClusterName = (typeof CLUSTERS)[number];
export const MAX_PODS = 8;
const CLUSTER_BLOCK = 10;

export interface ClusterPorts {
  readonly epp: number;
  readonly metrics: number;
  readonly pods: readonly number[];
}

export interface Layout {
  readonly frontDoor: number;
  readonly routerExtProc: number;
  readonly routerAdmin: number;
  /** The router's picker port: only in the byo shape (the gateway calls the router as the pool's Endpoint Picker). */
  readonly routerPicker?: number;
  readonly clusters: Readonly<Record<ClusterName, ClusterPorts>>;
}

export function layout(basePort: number, podsPerCluster: number, shape: GatewayShape = 'envoy'): Layout {
  const cluster = (i: number): ClusterPorts => {
    const first = basePort + CLUSTER_BLOCK * (i + 1);
    return {
      epp: first,
      metrics: first + 1,
      pods: Array.from({ length: podsPerCluster }, (_, p) => first + 2 + p),
    };
  };
  return {
    frontDoor: basePort,
    routerExtProc: basePort + 1,
    routerAdmin: basePort + 2,
    ...(shape === 'byo' ? { routerPicker: basePort + 3 } : {}),
    clusters: { 'cluster-a': cluster(0), 'cluster-b': cluster(1) },
  };
}

/** Every port of a layout with what it is for, in order. */
export function portsOf(l: Layout): { port: number; use: string }[] {
  const out = [
    { port: l.frontDoor, use: 'front door' },
    { port: l.routerExtProc, use: 'mcip-router ext_proc' },
    { port: l.routerAdmin, use: 'mcip-router admin' },
  ];
  if (l.routerPicker !== undefined) out.push({ port: l.routerPicker, use: 'mcip-router picker port' });
  for (const name of CLUSTERS) {
    const c = l.clusters[name];
    out.push({ port: c.epp, use: `${name} EPP` }, { port: c.metrics, use: `${name} EPP metrics` });
    c.pods.forEach((port, i) => out.push({ port, use: `${name} model server ${i}` }));
  }
  return out;
}

/** The highest port a base port needs (for validating --base-port). */
export function lastPort(basePort: number): number {
  return basePort + CLUSTER_BLOCK * CLUSTERS.length + 2 + MAX_PODS - 1;
}

/** Resolves true when `port` can be bound on the loopback address right now. */
export function portIsFree(port: number, host = HOST): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** Listens on `port` of the loopback address (exclusively); rejects if it cannot. */
export function listen(server: Server, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host: HOST, exclusive: true }, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** The ports of a layout that are already taken. */
export async function takenPorts(l: Layout): Promise<{ port: number; use: string }[]> {
  const taken: { port: number; use: string }[] = [];
  for (const p of portsOf(l)) if (!(await portIsFree(p.port))) taken.push(p);
  return taken;
}
