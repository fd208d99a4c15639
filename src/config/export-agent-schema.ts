/**
 * Config of the member agent (push/pull topology, `mcip-router --export-agent`):
 * it publishes this cluster's exports as an ExportRecord in its own hub namespace
 * and keeps the local InferencePoolImports from every member's record.
 */
import { z } from 'zod';
import { controllerName, kubernetesSourceSchema, leaderElectionSchema } from './kubernetes-schema.js';

export const exportAgentSchema = z
  .strictObject({
    /** How to reach the hub (a kubeconfig whose RBAC writes only this member's namespace); namespaces does not apply. */
    hub: kubernetesSourceSchema.prefault({}),
    /**
     * Each member's records live in the hub namespace PREFIX + its cluster name
     * (e.g. mcip-member-cluster-a); a record anywhere else is refused.
     */
    namespacePrefix: z
      .string()
      .min(1)
      .max(40)
      .regex(/^[a-z0-9]([-a-z0-9]*)$/, 'must start a lower-case RFC 1123 label, e.g. mcip-member-')
      .default('mcip-member-'),
    /** Our controller name in InferencePoolImport status.controllers[] and InferencePool status.parents[] (domain/path). */
    name: controllerName.default('mcip-router.dev/export-agent'),
    /** How often the leader renews this member's record on the hub (its heartbeat), changed or not. */
    heartbeatMs: z.number().int().min(100).default(10_000),
    /**
     * A member whose record did not change for this long (on this agent's clock) is stale: treated
     * as an unreachable member (its last exports are kept, pool statuses name it).
     */
    staleAfterMs: z.number().int().min(300).default(45_000),
    /** How often everything is re-checked even without changes (writes happen only on difference). */
    resyncMs: z.number().int().min(1000).default(60_000),
    /** After the last member stops exporting a pool: how long its InferencePoolImport stays before it is deleted. */
    withdrawalGraceMs: z.number().int().min(0).default(30_000),
    /** The agent's Lease lives in this (the member) cluster: one replica writes, locally and on the hub. */
    leaderElection: leaderElectionSchema('mcip-router-export-agent'),
  })
  .superRefine((a, ctx) => {
    if (a.staleAfterMs <= a.heartbeatMs) {
      ctx.addIssue({ code: 'custom', path: ['staleAfterMs'], message: 'staleAfterMs must be greater than heartbeatMs (at least two heartbeats are advised)' });
    }
    if (a.hub.namespaces.length > 0) {
      ctx.addIssue({ code: 'custom', path: ['hub', 'namespaces'], message: 'the hub is read in the members\' record namespaces (namespacePrefix) only' });
    }
  });

export type ExportAgentConfig = z.output<typeof exportAgentSchema>;
