/** Manifest texts and a recording listener for the manifest source tests. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ClusterState, SourceError, SourceListener } from '../../src/sources/types.js';

export function pool(name: string, opts: { port?: number; namespace?: string } = {}): string {
  return `apiVersion: inference.networking.k8s.io/v1
kind: InferencePool
metadata:
  name: ${name}
  namespace: ${opts.namespace ?? 'default'}
spec:
  selector:
    matchLabels: {app: ${name}}
  targetPorts:
    - number: ${opts.port ?? 8000}
  endpointPickerRef:
    name: ${name}-epp
    port: {number: 9002}
`;
}

export function service(name: string): string {
  return `apiVersion: v1
kind: Service
metadata:
  name: ${name}
spec:
  ports: [{name: grpc, port: 9002}]
`;
}

export const CONFIGMAP = `apiVersion: v1
kind: ConfigMap
metadata: {name: unrelated}
data: {a: b}
`;

export function docs(...texts: string[]): string {
  return texts.join('---\n');
}

/** Object identities of a state, "Kind namespace/name", in order. */
export function names(state: ClusterState | undefined): string[] {
  return (state?.objects ?? []).map((o) => `${o.kind} ${o.metadata.namespace}/${o.metadata.name}`);
}

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

  /** Resolves once `check` holds, polling every 20 ms; rejects after `timeoutMs`. */
  async until(check: (r: this) => boolean, timeoutMs = 3000): Promise<number> {
    const start = Date.now();
    while (!check(this)) {
      if (Date.now() - start > timeoutMs) {
        throw new Error(`timed out after ${timeoutMs} ms: ${this.states.length} states, ${this.errors.length} errors`);
      }
      await sleep(20);
    }
    return Date.now() - start;
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export async function tempDir(): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'mcip-manifests-'));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}
