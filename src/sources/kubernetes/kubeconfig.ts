/**
 * Builds a KubeConfig for one member cluster: the pod's service account
 * (inCluster), a kubeconfig file (e.g. mounted from a Secret) with an optional
 * context, or the default chain (KUBECONFIG, ~/.kube/config, in-cluster).
 * Every request made through it is bounded in time (api-access.ts).
 */
import { readFileSync } from 'node:fs';
import { kubernetesSourceSchema, type KubernetesSourceInput } from '../../config/schema.js';
import type { KubeConfig } from '@kubernetes/client-node';
import { BoundedKubeConfig } from './api-access.js';
import { credentialPlugin } from './credential-plugin.js';


const SA_NAMESPACE_FILE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

export class KubeConfigError extends Error {
  override readonly name = 'KubeConfigError';
}

/** A member's kubernetes source settings, as written or as parsed (absent fields take the schema's defaults). */
export type KubeConfigSettings = KubernetesSourceInput;

export interface KubeConfigContext {
  /** The member's name, for messages. */
  readonly cluster?: string;
  /** Called for settings that load but weaken security (insecure-skip-tls-verify). */
  readonly warn?: (message: string) => void;
}

/**
 * Loads the member's kubeconfig; `input` is validated and defaulted by the config schema (a
 * parsed config passes through unchanged). Credential plugins (a user's `exec` command or an
 * `auth-provider` other than a token file) run commands on this host: refused unless the
 * member sets allowExecPlugins. `insecure-skip-tls-verify` is reported through warn.
 */
export function loadKubeConfig(input: KubernetesSourceInput, context: KubeConfigContext = {}): BoundedKubeConfig {
  const k = kubernetesSourceSchema.parse(input);
  const kc = new BoundedKubeConfig({ requestTimeoutMs: k.requestTimeoutMs, watchIdleTimeoutMs: k.watchIdleTimeoutMs, maxResponseBytes: k.maxResponseBytes });
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
  const member = context.cluster === undefined ? '' : `cluster "${context.cluster}": `;
  const plugin = credentialPlugin(kc);
  if (plugin !== undefined && k.allowExecPlugins !== true) {
    throw new KubeConfigError(
      `${member}the kubeconfig user "${kc.getCurrentUser()?.name ?? ''}" uses ${plugin}, which runs a command on this host; ` +
        'use a token or client certificate, or set clusters[].kubernetes.allowExecPlugins: true',
    );
  }
  if (cluster.skipTLSVerify) {
    context.warn?.(`${member}the kubeconfig sets insecure-skip-tls-verify: the API server's certificate is not verified`);
  }
  return kc;
}

/** Where a member's own bearer token comes from: a static token or a token file (in-cluster). */
export type KubeToken = { readonly token: string } | { readonly tokenFile: string } | undefined;

/** The current user's bearer token (metrics scrapes authenticate as the member's own identity). */
export function kubeConfigToken(kc: KubeConfig): KubeToken {
  const user = kc.getCurrentUser();
  if (!user) return undefined;
  if (user.token) return { token: user.token.trim() };
  const provider = user.authProvider as { name?: unknown; config?: { tokenFile?: unknown } } | undefined;
  if (provider?.name === 'tokenFile' && typeof provider.config?.tokenFile === 'string') return { tokenFile: provider.config.tokenFile };
  return undefined;
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
