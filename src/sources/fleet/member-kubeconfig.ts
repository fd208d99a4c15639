/**
 * A member's connection built from its ClusterProfile's access provider: the
 * server, CA data, TLS server name and proxy the profile gives, and a bearer
 * token from the credential (the operator's plugin) on every request. No
 * kubeconfig user and no file on this host is involved.
 */
import type { KubernetesSourceConfig } from '../../config/schema.js';
import { type BearerCredential, BoundedKubeConfig } from '../kubernetes/api-access.js';
import type { ProfileCluster } from './cluster-profile.js';

export type MemberBounds = Pick<KubernetesSourceConfig, 'requestTimeoutMs' | 'watchIdleTimeoutMs' | 'maxResponseBytes'>;

/** `warn`: settings that load but weaken security (no TLS verification, plain http). */
export function memberKubeConfig(member: string, cluster: ProfileCluster, bounds: MemberBounds, bearer: BearerCredential, warn?: (message: string) => void): BoundedKubeConfig {
  const kc = new BoundedKubeConfig(bounds, bearer);
  kc.loadFromOptions({
    clusters: [
      {
        name: member,
        server: cluster.server,
        skipTLSVerify: cluster['insecure-skip-tls-verify'] === true,
        ...(cluster['certificate-authority-data'] !== undefined ? { caData: cluster['certificate-authority-data'] } : {}),
        ...(cluster['tls-server-name'] !== undefined ? { tlsServerName: cluster['tls-server-name'] } : {}),
        ...(cluster['proxy-url'] !== undefined ? { proxyUrl: cluster['proxy-url'] } : {}),
      },
    ],
    users: [{ name: 'credential-plugin' }],
    contexts: [{ name: member, cluster: member, user: 'credential-plugin' }],
    currentContext: member,
  });
  if (cluster['insecure-skip-tls-verify'] === true) warn?.(`cluster "${member}": its ClusterProfile sets insecure-skip-tls-verify: the API server's certificate is not verified`);
  if (cluster.server.startsWith('http://')) warn?.(`cluster "${member}": its ClusterProfile's server ${cluster.server} is plain http: the plugin's token is sent unencrypted`);
  return kc;
}
