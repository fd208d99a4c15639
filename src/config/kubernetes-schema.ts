/** Config of Kubernetes sources and of the InferencePoolImport import controller. */
import { z } from 'zod';
import { objectName } from './addresses.js';

/** Gateway API ControllerName: DOMAIN "/" PATH (the pattern of the InferencePoolImport CRD). */
export const CONTROLLER_NAME_PATTERN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$/;

/** A member cluster read from its Kubernetes API. */
export const kubernetesSourceSchema = z
  .strictObject({
    /** Use the pod's service account (the local cluster, when the router runs in it). */
    inCluster: z.boolean().optional(),
    /** kubeconfig file (e.g. mounted from a Secret), relative to the config file. Neither this nor inCluster: KUBECONFIG / ~/.kube/config / in-cluster. */
    kubeconfig: z.string().min(1).optional(),
    /** Context in the kubeconfig; default its current-context. */
    context: z.string().min(1).optional(),
    /** Namespaces to watch; empty = all namespaces. */
    namespaces: z.array(objectName).default([]),
    /** Client-side rate limit (token bucket) for this member's list and watch requests; absent = unlimited. */
    qps: z.number().positive().optional(),
    burst: z.number().int().min(1).optional(),
    /** Bound on every request to this API server except watches (list pages, get, create, patch, update, delete, Leases): connect, headers and body. */
    requestTimeoutMs: z.number().int().min(100).max(300_000).default(5_000),
    /** A watch that delivers no byte (event or bookmark) for this long is ended and resumed from its last resourceVersion; its connect is bounded by requestTimeoutMs. */
    watchIdleTimeoutMs: z.number().int().min(1_000).max(3_600_000).default(30_000),
    /**
     * Most bytes read from this API server for one request, and for all pages of one list together
     * (a list, a get, a write's answer; watches are bounded per event instead). A larger one fails
     * the request or list (retried with backoff) without being read further. At least 4 MiB: one
     * object may be 1.5 MiB.
     */
    maxResponseBytes: z.number().int().min(4 * 1024 * 1024).default(256 * 1024 * 1024),
    /** Run the kubeconfig's exec / auth-provider credential plugins (commands on this host). Refused by default. */
    allowExecPlugins: z.boolean().default(false),
  })
  .superRefine((k, ctx) => {
    if (k.inCluster && k.kubeconfig !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['kubeconfig'], message: 'inCluster and kubeconfig are mutually exclusive' });
    }
    if (k.inCluster && k.context !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['context'], message: 'context needs a kubeconfig (not inCluster)' });
    }
  });

/** A member's Kubernetes settings before defaults (what tests and tools may hand to loadKubeConfig). */
export type KubernetesSourceInput = z.input<typeof kubernetesSourceSchema>;

/** A controller name as InferencePoolImport and InferencePool status carry it. */
export const controllerName = z
  .string()
  .min(1)
  .max(253)
  .regex(CONTROLLER_NAME_PATTERN, 'must be a domain/path controller name, e.g. example.com/import-controller');

/** Leader election on a coordination.k8s.io Lease (one per controller, so each has its own writer). */
export function leaderElectionSchema(defaultLeaseName: string) {
  return z
    .strictObject({
      /** Off: every replica writes status (only sensible with one replica). */
      enabled: z.boolean().default(true),
      leaseName: objectName.default(defaultLeaseName),
      /** Default: the pod's namespace (service account), else "default". */
      leaseNamespace: objectName.optional(),
      leaseDurationMs: z.number().int().min(1000).default(15_000),
      renewDeadlineMs: z.number().int().min(100).default(10_000),
      retryPeriodMs: z.number().int().min(10).default(2_000),
      /** Default: hostname + "_" + pid. */
      identity: z.string().min(1).max(128).optional(),
    })
    .prefault({})
    .refine((l) => l.renewDeadlineMs < l.leaseDurationMs, { message: 'renewDeadlineMs must be less than leaseDurationMs', path: ['renewDeadlineMs'] })
    .refine((l) => l.retryPeriodMs < l.renewDeadlineMs, { message: 'retryPeriodMs must be less than renewDeadlineMs', path: ['retryPeriodMs'] });
}

/** An address the router reports in its Gateways' status.addresses (Gateway API GatewayStatusAddress). */
export const gatewayAddressSchema = z.strictObject({
  type: z.enum(['IPAddress', 'Hostname']).default('IPAddress'),
  value: z.string().min(1).max(253),
});

/** Gateway API status of the router's own Gateways (GatewayClass, Gateway, HTTPRoute status.parents[]). */
export const gatewayStatusObject = z.strictObject({
  /** Write status on GatewayClasses whose spec.controllerName is ours, their served Gateways and those Gateways' HTTPRoutes. */
  enabled: z.boolean().default(true),
  /** Our GatewayClass spec.controllerName and HTTPRoute status.parents[].controllerName. */
  controllerName: controllerName.default('mcip-router.dev/gateway-controller'),
  /** The Service in front of the Envoy (the chart's): its load-balancer ingress, external IPs or cluster IP become status.addresses. */
  addressService: z.strictObject({ namespace: objectName, name: objectName }).optional(),
  /** Addresses reported as they are (before those of addressService). */
  addresses: z.array(gatewayAddressSchema).max(16).default([]),
});
export const gatewayStatusSchema = gatewayStatusObject.prefault({});

export const controllerSchema = z.strictObject({
  /** Maintain our status.controllers[] entry on referenced InferencePoolImports. Default: on when the local cluster uses a kubernetes source. */
  enabled: z.boolean().optional(),
  /** Our controller name in InferencePoolImport status (domain/path). */
  name: controllerName.default('mcip-router.dev/import-controller'),
  /** How often every import is re-checked even without changes (writes happen only on difference). */
  resyncMs: z.number().int().min(1000).default(60_000),
  leaderElection: leaderElectionSchema('mcip-router-import-controller'),
  /** Gateway API status, written by the same leader (its Lease) on the same triggers. */
  gatewayStatus: gatewayStatusSchema,
});
