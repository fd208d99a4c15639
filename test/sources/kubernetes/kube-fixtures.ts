/** Object builders, listeners and polling helpers for the Kubernetes-mode tests. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import type { KubeObject, ObjectKind } from '../../../src/model/types.js';
import { KubernetesSource, type KubernetesSourceOptions } from '../../../src/sources/kubernetes/kubernetes-source.js';
import { loadKubeConfig } from '../../../src/sources/kubernetes/kubeconfig.js';
import { LOCAL_KINDS } from '../../../src/sources/kubernetes/resources.js';
import type { ClusterState, SourceError, SourceListener } from '../../../src/sources/types.js';
import { KubeApiServer, writeKubeconfig } from '../../harness/kube-apiserver.js';

export const silent = pino({ level: 'silent' });

export function pool(name: string, namespace = 'default', epp = `${name}-epp`, extra: object = {}): object {
  return {
    apiVersion: 'inference.networking.k8s.io/v1',
    kind: 'InferencePool',
    metadata: { name, namespace, ...extra },
    spec: { selector: { matchLabels: { app: name } }, targetPorts: [{ number: 8000 }], endpointPickerRef: { name: epp, port: { number: 9002 } } },
  };
}

export function service(name: string, namespace = 'default', clusterIP = '10.0.0.10'): object {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace },
    spec: { type: 'ClusterIP', clusterIP, ports: [{ name: 'grpc', port: 9002, protocol: 'TCP' }] },
  };
}

export function gateway(name: string, namespace = 'default', address = '10.1.0.1'): object {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { name, namespace },
    spec: { gatewayClassName: 'test', listeners: [{ name: 'http', protocol: 'HTTP', port: 8080 }] },
    status: { addresses: [{ type: 'IPAddress', value: address }] },
  };
}

export interface BackendSpec {
  readonly kind: 'InferencePool' | 'InferencePoolImport';
  readonly name: string;
  readonly weight?: number;
}

export function route(name: string, parent: string, backends: readonly BackendSpec[], namespace = 'default'): object {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name, namespace },
    spec: {
      parentRefs: [{ name: parent }],
      rules: [
        {
          matches: [{ path: { type: 'PathPrefix', value: '/' } }],
          backendRefs: backends.map((b) => ({
            group: b.kind === 'InferencePool' ? 'inference.networking.k8s.io' : 'inference.networking.x-k8s.io',
            kind: b.kind,
            name: b.name,
            ...(b.weight !== undefined ? { weight: b.weight } : {}),
          })),
        },
      ],
    },
  };
}

export function importObj(name: string, controllers: readonly object[] = [], namespace = 'default'): object {
  return {
    apiVersion: 'inference.networking.x-k8s.io/v1alpha1',
    kind: 'InferencePoolImport',
    metadata: { name, namespace },
    status: { controllers },
  };
}

export function exportEntry(controller: string, clusters: readonly string[]): object {
  return { name: controller, exportingClusters: clusters.map((name) => ({ name })) };
}

/** Records every state and error a source delivers. */
export class Recorder implements SourceListener {
  readonly states: ClusterState[] = [];
  readonly errors: SourceError[] = [];
  onState(state: ClusterState): void {
    this.states.push(state);
  }
  onError(error: SourceError): void {
    this.errors.push(error);
  }
  get last(): ClusterState | undefined {
    return this.states[this.states.length - 1];
  }
  names(kind?: ObjectKind): string[] {
    return (this.last?.objects ?? [])
      .filter((o: KubeObject) => kind === undefined || o.kind === kind)
      .map((o) => `${o.kind}/${o.metadata.namespace}/${o.metadata.name}`)
      .sort();
  }
}

export async function waitFor<T>(fn: () => T | undefined | false, timeoutMs = 2000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A stand-in API server, a kubeconfig for it and a temp dir, torn down together. */
export class KubeEnv {
  server = new KubeApiServer();
  dir = '';
  kubeconfig = '';
  private readonly sources: KubernetesSource[] = [];

  async start(): Promise<this> {
    await this.server.start();
    this.dir = await mkdtemp(join(tmpdir(), 'mcip-kube-'));
    this.kubeconfig = await writeKubeconfig(this.dir, { server: this.server.url });
    return this;
  }

  source(overrides: Partial<KubernetesSourceOptions> = {}): KubernetesSource {
    const s = new KubernetesSource({
      cluster: 'cluster-a',
      kubeConfig: () => loadKubeConfig({ kubeconfig: this.kubeconfig, namespaces: [] }),
      kinds: LOCAL_KINDS,
      namespaces: [],
      coalesceMs: 20,
      coalesceMaxMs: 200,
      initialSyncTimeoutMs: 2000,
      backoffInitialMs: 50,
      backoffMaxMs: 200,
      logger: silent,
      ...overrides,
    });
    this.sources.push(s);
    return s;
  }

  async close(): Promise<void> {
    await Promise.all(this.sources.map((s) => s.stop()));
    await this.server.close();
    if (this.dir) await rm(this.dir, { recursive: true, force: true });
  }
}
