/**
 * One HTTP dispatcher per kubeconfig connection identity, kept across requests.
 *
 * @kubernetes/client-node builds a new undici Agent for every request of a
 * kubeconfig that carries TLS material (a CA, a client certificate): no
 * connection is ever reused, so every list, get, patch, Lease renewal and
 * watch pays a TLS handshake on both sides. An export controller writing the
 * imports of 50 members opened one connection per write. This cache keeps the
 * Agent for as long as the kubeconfig's TLS material (read again for every
 * request, as client-node does: a rotated certificate file takes effect) and
 * proxy stay the same, so requests reuse idle keep-alive connections; on a
 * change a new Agent is made, and the old one is dropped, not closed: a request
 * that took it just before may still dispatch on it, and its idle connections
 * end on undici's keep-alive timeout (its watches on their own bounds).
 *
 * Kubeconfigs whose user runs a credential plugin (exec, or an auth-provider
 * other than a token file) may get a client certificate from it: for those,
 * and for SOCKS proxies, client-node's own per-request dispatcher is kept.
 */
import { createHash } from 'node:crypto';
import type { AgentOptions } from 'node:https';
import { bufferFromFileOrString, type KubeConfig } from '@kubernetes/client-node';
import { credentialPlugin } from './credential-plugin.js';
import { Agent, type Dispatcher, ProxyAgent } from 'undici';

export class DispatcherCache {
  private current: { readonly key: string; readonly dispatcher: Dispatcher } | undefined;

  /** The dispatcher for the kubeconfig's current cluster and user; undefined: keep what client-node chose. */
  for(kc: KubeConfig): Dispatcher | undefined {
    const cluster = kc.getCurrentCluster();
    const user = kc.getCurrentUser();
    if (!cluster || !user || !cluster.server.startsWith('https:')) return undefined;
    if (credentialPlugin(kc) !== undefined) return undefined;
    // The TLS settings client-node derives from the same kubeconfig for every request.
    const tls: AgentOptions = {};
    const ca = bufferFromFileOrString(cluster.caFile, cluster.caData);
    const cert = bufferFromFileOrString(user.certFile, user.certData);
    const key = bufferFromFileOrString(user.keyFile, user.keyData);
    if (ca) tls.ca = ca;
    if (cert) tls.cert = cert;
    if (key) tls.key = key;
    if (cluster.skipTLSVerify) tls.rejectUnauthorized = false;
    if (cluster.tlsServerName) tls.servername = cluster.tlsServerName;
    const o = kc.createDispatcherOptions(cluster, tls);
    if (o.type !== 'agent' && o.type !== 'proxy') return undefined;
    const id = fingerprint(o);
    if (this.current?.key === id) return this.current.dispatcher;
    const dispatcher = o.type === 'agent' ? new Agent({ connect: o.connect }) : new ProxyAgent({ uri: o.uri, requestTls: o.requestTls, connect: o.connect });
    this.current = { key: id, dispatcher };
    return dispatcher;
  }
}

/** A digest of the dispatcher options (key material included, never kept in the clear). */
function fingerprint(o: object): string {
  // The replacer sees a Buffer's toJSON() form; its holder still has the Buffer itself.
  const text = JSON.stringify(o, function (this: Record<string, unknown>, k, v: unknown) {
    const raw = this[k];
    return Buffer.isBuffer(raw) ? raw.toString('base64') : v;
  });
  return createHash('sha256').update(text).digest('base64');
}
