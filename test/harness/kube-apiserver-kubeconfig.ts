/** Writes kubeconfig files pointing at the Kubernetes API server stand-in. */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';

export interface KubeconfigOptions {
  readonly server: string;
  readonly token?: string;
  /** Context name (default "test"). */
  readonly context?: string;
  /** current-context (default: the context above). A decoy context pointing nowhere is always present too. */
  readonly currentContext?: string;
  readonly namespace?: string;
}

/** Writes the kubeconfig and returns its path. The stand-in speaks plain HTTP, hence insecure-skip-tls-verify. */
export async function writeKubeconfig(dir: string, options: KubeconfigOptions, fileName = 'kubeconfig'): Promise<string> {
  const ctx = options.context ?? 'test';
  const doc = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      { name: `${ctx}-cluster`, cluster: { server: options.server, 'insecure-skip-tls-verify': true } },
      { name: 'decoy-cluster', cluster: { server: 'http://127.0.0.1:1', 'insecure-skip-tls-verify': true } },
    ],
    users: [{ name: `${ctx}-user`, user: { token: options.token ?? 'test-token' } }],
    contexts: [
      { name: ctx, context: { cluster: `${ctx}-cluster`, user: `${ctx}-user`, ...(options.namespace ? { namespace: options.namespace } : {}) } },
      { name: 'decoy', context: { cluster: 'decoy-cluster', user: `${ctx}-user` } },
    ],
    'current-context': options.currentContext ?? ctx,
  };
  const path = join(dir, fileName);
  await writeFile(path, stringify(doc), 'utf8');
  return path;
}
