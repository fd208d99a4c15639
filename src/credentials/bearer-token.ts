/**
 * The bearer token a scrape sends: a token file (re-read when it changes), or a
 * member's own Kubernetes credentials (its kubeconfig user's token, re-read when
 * the kubeconfig changes; in-cluster, the service-account token file, which the
 * kubelet rotates). Reads are asynchronous except the kubeconfig parse, which
 * happens only when the kubeconfig file changed or after a 401/403.
 */
import { readFile, stat } from 'node:fs/promises';
import type { KubeConfigSettings } from '../sources/kubernetes/kubeconfig.js';

/** The token file of the pod's service account (projected and rotated by the kubelet). */
export const SERVICE_ACCOUNT_TOKEN_FILE = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/** Where a scrape's token comes from (plain data: part of the scrape target's identity). */
export type BearerTokenSpec =
  | { readonly file: string }
  /** A member's own credentials, from its kubernetes source settings (not in-cluster: that is a file). */
  | { readonly kubeconfig: KubeConfigSettings };

/** The token spec of a member: bearerTokenFile overrides its Kubernetes credentials. */
export function bearerTokenSpec(bearerTokenFile: string | undefined, kubernetes: KubeConfigSettings | undefined): BearerTokenSpec | undefined {
  if (bearerTokenFile !== undefined) return { file: bearerTokenFile };
  if (kubernetes === undefined) return undefined;
  if (kubernetes.inCluster) return { file: SERVICE_ACCOUNT_TOKEN_FILE };
  return { kubeconfig: kubernetes };
}

export class BearerTokenError extends Error {
  override readonly name = 'BearerTokenError';
}

const stampOf = async (path: string): Promise<string> => {
  const st = await stat(path);
  return `${st.ino}:${st.size}:${st.mtimeMs}`;
};

export class BearerToken {
  private cached: { key: string; value: string | undefined } | undefined;

  constructor(private readonly spec: BearerTokenSpec) {}

  /** Forget the cached token (after a 401/403): the next get() reads again. */
  invalidate(): void {
    this.cached = undefined;
  }

  /** The current token; undefined when the member's kubeconfig user has none (e.g. a client certificate). Rejects with BearerTokenError. */
  async get(): Promise<string | undefined> {
    return 'file' in this.spec ? this.fromFile(this.spec.file, 'bearer token file') : this.fromKubeconfig(this.spec.kubeconfig);
  }

  private async fromFile(path: string, what: string): Promise<string> {
    try {
      const key = `file|${path}|${await stampOf(path)}`;
      if (this.cached?.key === key && this.cached.value !== undefined) return this.cached.value;
      const value = (await readFile(path, 'utf8')).trim();
      this.cached = { key, value };
      return value;
    } catch (err) {
      throw new BearerTokenError(`cannot read ${what} ${path}: ${(err as Error).message}`);
    }
  }

  private async fromKubeconfig(k: KubeConfigSettings): Promise<string | undefined> {
    let key = 'kubeconfig|default';
    if (k.kubeconfig !== undefined) {
      try {
        key = `kubeconfig|${await stampOf(k.kubeconfig)}`;
      } catch (err) {
        throw new BearerTokenError(`cannot read kubeconfig ${k.kubeconfig}: ${(err as Error).message}`);
      }
    }
    if (this.cached?.key === key) return this.cached.value;
    // Loaded only for members read from Kubernetes, which load this module anyway.
    const { kubeConfigToken, loadKubeConfig } = await import('../sources/kubernetes/kubeconfig.js');
    let token;
    try {
      token = kubeConfigToken(loadKubeConfig(k));
    } catch (err) {
      throw new BearerTokenError((err as Error).message);
    }
    if (token !== undefined && 'tokenFile' in token) return this.fromFile(token.tokenFile, 'kubeconfig token file');
    const value = token?.token;
    this.cached = { key, value };
    return value;
  }
}
