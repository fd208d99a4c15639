/**
 * Config of members taken from a fleet manager: the ClusterProfiles of one hub
 * namespace, and the credential plugins (the operator's provider file) that
 * give the router a token for each member.
 */
import { z } from 'zod';
import { objectName } from './addresses.js';
import { eppAnswersSchema } from './guard-schema.js';
import { kubernetesSourceSchema } from './kubernetes-schema.js';
import { eppSchema, parentProbeSchema } from './signals-schema.js';

/** An environment variable name (POSIX portable). */
const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name');

/** How the router runs the credential plugins named in the provider file. */
export const execPluginsSchema = z.strictObject({
  /** A plugin still running after this long is killed (its whole process group) and the run fails. */
  timeoutMs: z.number().int().min(100).max(300_000).default(10_000),
  /** Most bytes read from a plugin's standard output; past this it is killed and the run fails. Its standard error is kept to 4 KiB for messages. */
  maxOutputBytes: z.number().int().min(1024).max(16 * 1024 * 1024).default(64 * 1024),
  /**
   * The only variables of the router's own environment a plugin sees (besides its provider's
   * execConfig.env and KUBERNETES_EXEC_INFO). Add what a plugin needs, e.g. AWS_ROLE_ARN.
   */
  inheritEnv: z.array(envName).default(['PATH', 'HOME', 'KUBERNETES_SERVICE_HOST', 'KUBERNETES_SERVICE_PORT']),
  /**
   * A token is refreshed (the plugin run again) this long before its expirationTimestamp, or
   * halfway through its life if that is shorter. A token without expiry is kept until the API
   * server refuses it (401).
   */
  refreshBeforeExpiryMs: z.number().int().min(0).default(60_000),
  /** After a failed run, requests for the token fail with the same error for this long before the plugin runs again. */
  retryAfterFailureMs: z.number().int().min(0).default(5_000),
  /** Most plugins running at once (all members together); further runs wait their turn, so a fleet of many members starts without a process per member at once. */
  maxConcurrentRuns: z.number().int().min(1).max(256).default(4),
});

const k = kubernetesSourceSchema.shape;

/**
 * How the router reads and uses each member a profile names (the connection itself comes from
 * the profile): what clusters[] sets per member, once for all of them.
 */
export const fleetMemberSchema = z.strictObject({
  /** Transport settings for the members' EPPs (as clusters[].epp). */
  epp: eppSchema.prefault({}),
  /** What the router relays from the members' EPPs (as clusters[].eppAnswers). */
  eppAnswers: eppAnswersSchema.prefault({}),
  /** Parent mode: how to probe the members' parent Gateways (as clusters[].parentProbe). */
  parentProbe: parentProbeSchema.prefault({}),
  /** Namespaces read in each member; empty = all namespaces. */
  namespaces: k.namespaces,
  /**
   * Members connected at once: a member's first lists wait for a free slot, and the next member
   * starts as soon as one's first list ends, synced or not (plugin runs: plugins.maxConcurrentRuns).
   */
  startConcurrency: z.number().int().min(1).max(1000).default(8),
  qps: k.qps,
  burst: k.burst,
  requestTimeoutMs: k.requestTimeoutMs,
  watchIdleTimeoutMs: k.watchIdleTimeoutMs,
  maxResponseBytes: k.maxResponseBytes,
});

export const clusterProfilesSchema = z
  .strictObject({
  /** How to reach the hub that holds the ClusterProfiles: a member's kubernetes settings (kubeconfig relative to the config file); namespaces does not apply. */
  hub: kubernetesSourceSchema.prefault({}),
  /** The hub namespace whose ClusterProfiles are the members (e.g. fleet-system, or an OCM bound namespace). */
  namespace: objectName,
  /**
   * The name (metadata.name) of this cluster's own ClusterProfile in that namespace: it names the
   * local cluster (its cluster.clusterset.k8s.io property, else its name) when clusterName is not
   * set and the About API does not, and it is never taken as a remote member.
   */
  localProfile: objectName.optional(),
  /** Only profiles matching this label selector (e.g. x-k8s.io/cluster-manager=KubeFleet or =open-cluster-management, as the fleet manager labels them); empty: all. */
  labelSelector: z.string().max(1024).default(''),
  /** ClusterProfile version served by the hub (group multicluster.x-k8s.io). */
  apiVersion: z
    .string()
    .regex(/^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$/, 'must be a Kubernetes API version such as v1alpha1')
    .default('v1alpha1'),
  /**
   * The operator's provider file (the ClusterProfile credential-plugin format: providers[] of
   * {name, execConfig}), relative to the config file. Only its plugins ever run.
   */
  providerFile: z.string().min(1),
  plugins: execPluginsSchema.prefault({}),
  /** Settings for reading every member taken from a profile. */
  members: fleetMemberSchema.prefault({}),
  })
  .superRefine((c, ctx) => {
    if (c.hub.namespaces.length > 0) {
      ctx.addIssue({ code: 'custom', path: ['hub', 'namespaces'], message: 'the hub is read in fleet.clusterProfiles.namespace only' });
    }
  });

export const fleetSchema = z.strictObject({
  /** Members from the fleet manager's ClusterProfiles, next to (never instead of) clusters[]. */
  clusterProfiles: clusterProfilesSchema.optional(),
});

export type ExecPluginsConfig = z.output<typeof execPluginsSchema>;
export type ClusterProfilesConfig = z.output<typeof clusterProfilesSchema>;
