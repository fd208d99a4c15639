/** Value overrides the chart tests render besides values.yaml. */
import type { Obj } from './render-chart.js';

/** A three-member ClusterSet with per-cluster settings, as an operator would write it. */
export const REMOTE_VALUES: Obj = {
  clusterName: 'cluster-a',
  gateways: [{ namespace: 'inference', name: 'inference-gateway' }],
  localCluster: {
    namespaces: ['inference', 'models'],
    epp: { tls: { enabled: false }, metrics: { port: 9090 } },
    addressOverrides: { services: [{ namespace: 'models', name: 'epp', address: '10.0.0.9:9002' }] },
    qps: 50,
    burst: 100,
  },
  remoteClusters: [
    {
      name: 'cluster-b',
      kubeconfigSecret: { name: 'cluster-b-kubeconfig' },
      namespaces: ['inference'],
      epp: { tls: { insecureSkipVerify: true }, health: { port: 9003, service: 'inference-extension', tls: 'disabled' } },
      addressOverrides: { services: [{ namespace: 'inference', name: 'llm-pool-epp', address: '10.1.2.3:9002' }] },
      failOpen: { endpoints: [{ namespace: 'inference', pool: 'llm-pool', endpoints: ['10.1.4.5:8000'] }] },
      eppAnswers: { destinations: { allow: ['10.1.0.0/16'] } },
    },
    {
      name: 'cluster-c.eu-west',
      kubeconfigSecret: { name: 'cluster-c', key: 'config' },
      context: 'reader@cluster-c',
      qps: 10,
      requestTimeoutMs: 2000,
      watchIdleTimeoutMs: 60000,
      maxResponseBytes: 64 * 1024 * 1024,
      burst: 20,
      parentProbe: { mode: 'http', path: '/healthz' },
    },
  ],
  controller: { leaderElection: { leaseName: 'mcip-import', leaseNamespace: 'kube-system' } },
  extProc: { drainTimeoutMs: 20000, destinationHeader: 'primary' },
  kubernetesTuning: { coalesceMs: 50 },
  outlier: { consecutiveFailures: 3 },
  picker: { saturation: { queueSize: 8 } },
  routes: { regex: { maxLength: 512 } },
  tracing: { endpoint: 'http://otel-collector.observability:4318', samplerRatio: 0.1 },
  log: { level: 'debug' },
  envoy: { preStopSleepSeconds: 30 },
  terminationGracePeriodSeconds: 60,
  serviceMonitor: { enabled: true, labels: { release: 'prometheus' } },
  remoteReader: { create: true },
};

/** The Endpoint Picker role with every part on, behind an Istio gateway in istio-ingress. */
export const ENDPOINT_PICKER_VALUES: Obj = {
  endpointPicker: {
    enabled: true,
    ports: [9010, 9011],
    defaultAnswer: 'relay',
    tls: { secretName: 'mcip-picker-tls' },
    relay: { port: 8443, tokenTtlMs: 5000, maxSkewMs: 1000 },
    networkPolicy: {
      gatewayNamespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'istio-ingress' } },
      gatewayPodSelector: { matchLabels: { 'gateway.networking.k8s.io/gateway-name': 'inference-gateway' } },
    },
  },
};

/** The OCM provider file of docs/fleet.md, as a provider file's content. */
export const OCM_PROVIDERS: Obj = {
  providers: [
    {
      name: 'open-cluster-management',
      execConfig: { apiVersion: 'client.authentication.k8s.io/v1', command: '/usr/local/bin/cp-creds', args: ['--managed-serviceaccount=mcip-router'], provideClusterInfo: true, interactiveMode: 'Never' },
    },
  ],
};

/** Members from the ClusterProfiles of this cluster (the hub, in-cluster), the provider file inline. */
export const FLEET_VALUES: Obj = {
  clusterName: 'hub',
  fleet: {
    clusterProfiles: {
      enabled: true,
      namespace: 'fleet-members',
      labelSelector: 'x-k8s.io/cluster-manager=open-cluster-management',
      apiVersion: 'v1alpha1',
      providers: { inline: OCM_PROVIDERS },
      plugins: { timeoutMs: 5000, inheritEnv: ['PATH', 'HOME', 'KUBERNETES_SERVICE_HOST', 'KUBERNETES_SERVICE_PORT', 'NAMESPACE'] },
      members: { namespaces: ['inference'], qps: 20, epp: { tls: { insecureSkipVerify: true } } },
      readSecrets: true,
    },
  },
};

/** The export agent of member cluster-a (push/pull), its hub kubeconfig in the Secret mcip-hub. */
export const AGENT_VALUES: Obj = {
  clusterName: 'cluster-a',
  exportAgent: { enabled: true, hub: { kubeconfigSecret: { name: 'mcip-hub', key: 'config' }, requestTimeoutMs: 2000 } },
};
