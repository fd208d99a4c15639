/** ClusterProfiles as Open Cluster Management publishes them (one per managed cluster, secretreader access). */
export interface ProfileOptions {
  readonly namespace?: string;
  readonly server?: string;
  /** certificate-authority-data (base64 PEM); default a placeholder. */
  readonly caData?: string;
  /** Access provider name (default secretreader) and the clusterName its exec extension passes to the plugin. */
  readonly provider?: string;
  readonly clusterName?: string;
  readonly properties?: Readonly<Record<string, string>>;
  /** Default: ControlPlaneHealthy True. */
  readonly conditions?: readonly object[];
  readonly created?: string;
  readonly labels?: Readonly<Record<string, string>>;
}

export const HEALTHY = { type: 'ControlPlaneHealthy', status: 'True', reason: 'ManagedClusterAvailable', message: 'Managed cluster is available', lastTransitionTime: '2026-01-01T00:00:00Z' };

export function clusterProfile(name: string, o: ProfileOptions) {
  return {
    apiVersion: 'multicluster.x-k8s.io/v1alpha1',
    kind: 'ClusterProfile',
    metadata: {
      name,
      namespace: o.namespace ?? 'fleet-system',
      labels: o.labels ?? { 'x-k8s.io/cluster-manager': 'open-cluster-management' },
      ...(o.created ? { creationTimestamp: o.created } : {}),
    },
    spec: { displayName: name, clusterManager: { name: 'open-cluster-management' } },
    status: {
      conditions: o.conditions ?? [HEALTHY],
      properties: Object.entries(o.properties ?? {}).map(([n, value]) => ({ name: n, value })),
      accessProviders: [
        {
          name: o.provider ?? 'secretreader',
          cluster: {
            server: o.server ?? `https://${name.toLowerCase()}.example:6443`,
            'certificate-authority-data': o.caData ?? 'Q0E=',
            extensions: [{ name: 'client.authentication.k8s.io/exec', extension: { clusterName: o.clusterName ?? name } }],
          },
        },
      ],
    },
  };
}
