/**
 * Builds a KubeConfig for one member cluster: the pod's service account
 * (inCluster), a kubeconfig file (e.g. mounted from a Secret) with an optional
 * context, or the default chain (KUBECONFIG, ~/.kube/config, in-cluster).
 * Every request made through it is bounded in time (api-access.ts).
 */
import { readFileSync } from 'node:fs';
import { kubernetesSourceSchema, type KubernetesSourceInput } from '../../config/schema.js';
import { BoundedKubeConfig } from './api-access.js';

const SA_NAMESPACE_FILE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

export class KubeConfigError extends Error {
  override readonly name = 'KubeConfigError';
}

/** `input` is validated and defaulted by the config schema (a parsed config passes through unchanged). */
export function loadKubeConfig(input: KubernetesSourceInput): BoundedKubeConfig {
  const k = kubernetesSourceSchema.parse(input);
  const kc = new BoundedKubeConfig({ requestTimeoutMs: k.requestTimeoutMs, watchIdleTimeoutMs: k.watchIdleTimeoutMs });
  try {
    if (k.inCluster) {
      if (!process.env.KUBERNETES_SERVICE_HOST || !process.env.KUBERNETES_SERVICE_PORT) {
        throw new KubeConfigError('inCluster: KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT are not set (not running in a pod?)');
      }
      kc.loadFromCluster();
    } else if (k.kubeconfig !== undefined) {
      kc.loadFromFile(k.kubeconfig);
    } else {
      kc.loadFromDefault();
    }
  } catch (err) {
    if (err instanceof KubeConfigError) throw err;
    const where = k.kubeconfig !== undefined ? `kubeconfig ${k.kubeconfig}` : k.inCluster ? 'in-cluster config' : 'default kubeconfig';
    throw new KubeConfigError(`cannot load ${where}: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (k.context !== undefined) {
    if (!kc.getContextObject(k.context)) {
      const known = kc.getContexts().map((c) => c.name);
      throw new KubeConfigError(`context "${k.context}" not found in ${k.kubeconfig ?? 'the kubeconfig'} (has: ${known.join(', ') || 'none'})`);
    }
    kc.setCurrentContext(k.context);
  }
  const cluster = kc.getCurrentCluster();
  if (!cluster?.server) throw new KubeConfigError(`the kubeconfig's current context "${kc.getCurrentContext()}" names no cluster server`);
  return kc;
}

/** The namespace the router's pod runs in (service account), if it runs in one. */
export function podNamespace(): string | undefined {
  try {
    const ns = readFileSync(SA_NAMESPACE_FILE, 'utf8').trim();
    return ns === '' ? undefined : ns;
  } catch {
    return process.env.POD_NAMESPACE || undefined;
  }
}
