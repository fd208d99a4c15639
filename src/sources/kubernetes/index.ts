/** Kubernetes object sources: what src/main.ts and src/sources/create-source.ts use. */
export { KubernetesSource, KubernetesSourceError, type KubernetesSourceOptions, type ResourceStatus } from './kubernetes-source.js';
export { loadKubeConfig, podNamespace, KubeConfigError } from './kubeconfig.js';
export { LOCAL_KINDS, LOCAL_PICKER_KINDS, REMOTE_KINDS, RESOURCE_SPECS, type ResourceSpec } from './resources.js';
