/**
 * A member cluster in the router config (clusters[]): how its objects are read,
 * its EPPs reached and their answers judged. The local cluster's entry may
 * leave its name to start-up (local-cluster.ts).
 */
import { z } from 'zod';
import { addressOverrideSchema, ipPort, objectName } from './addresses.js';
import { eppAnswersSchema } from './guard-schema.js';
import { kubernetesSourceSchema } from './kubernetes-schema.js';
import { eppSchema, parentProbeSchema } from './signals-schema.js';

export const manifestSourceSchema = z.strictObject({
  /** Files or directories of multi-document Kubernetes YAML, relative to the config file. */
  paths: z.array(z.string().min(1)).min(1),
});

/** FailOpen endpoints listed statically for a pool of this cluster. */
export const failOpenSchema = z.strictObject({
  /** Used when every EPP attempt failed for a FailOpen pool and no endpoint its EPP returned recently is known. */
  endpoints: z
    .array(z.strictObject({ namespace: objectName, pool: objectName, endpoints: z.array(ipPort).min(1) }))
    .default([]),
});

const clusterFields = {
  /** The cluster's name in the ClusterSet. */
  name: objectName,
  manifests: manifestSourceSchema.optional(),
  /** Read this cluster from its Kubernetes API (exactly one of manifests | kubernetes). */
  kubernetes: kubernetesSourceSchema.optional(),
  /** Transport settings for this cluster's EPPs. */
  epp: eppSchema.prefault({}),
  /** What the router relays from this cluster's EPPs: allowed destinations and header mutations. */
  eppAnswers: eppAnswersSchema.prefault({}),
  /** Parent mode: how to probe this cluster's parent Gateways. */
  parentProbe: parentProbeSchema.prefault({}),
  /** FailOpen pools of this cluster: static endpoints to route to when their EPPs fail. */
  failOpen: failOpenSchema.prefault({}),
  addressOverrides: z
    .strictObject({
      /** EPP Service address overrides (used instead of the Service's own addresses). */
      services: z.array(addressOverrideSchema).default([]),
      /** Parent Gateway address overrides (Parent mode). Must resolve to ip:port. */
      gateways: z.array(addressOverrideSchema).default([]),
    })
    .prefault({}),
};

function checkCluster(c: { readonly name?: string | undefined; readonly epp: z.output<typeof eppSchema> }, ctx: z.RefinementCtx): void {
  const m = c.epp.metrics;
  if (m.bearerTokenFile !== undefined && m.scheme === 'http' && !m.allowTokenOverPlainHttp) {
    ctx.addIssue({
      code: 'custom',
      path: ['epp', 'metrics', 'bearerTokenFile'],
      message: `${c.name !== undefined ? `cluster "${c.name}"` : 'the local cluster'}: a bearer token is not sent over plain http; set epp.metrics.scheme: https, or allowTokenOverPlainHttp: true to accept the risk`,
    });
  }
}

/** A member cluster, named. */
export const clusterSchema = z.strictObject(clusterFields).superRefine(checkCluster);

/** A clusters[] entry of the config: the local cluster's may leave its name to its About API or ClusterProfile (local-cluster.ts). */
export const configClusterSchema = z
  .strictObject({
    ...clusterFields,
    /** The cluster's name in the ClusterSet. Only the local cluster's entry may leave it out (clusterName). */
    name: objectName.optional(),
    /** This entry is the cluster the router runs in (needed without clusterName when clusters[] has more than one entry). */
    local: z.boolean().optional(),
  })
  .superRefine(checkCluster);
