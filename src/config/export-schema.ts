/** Config of the export controller (hub topology): InferencePoolImports in every member for pools exported to the ClusterSet. */
import { z } from 'zod';
import { controllerName, leaderElectionSchema } from './kubernetes-schema.js';

export const exportControllerSchema = z.strictObject({
  /**
   * Run the export controller inside the router process. `mcip-router --export-controller`
   * runs it on its own (no ext_proc) whatever this says.
   */
  enabled: z.boolean().default(false),
  /** Our controller name in InferencePoolImport status.controllers[] and InferencePool status.parents[] (domain/path). */
  name: controllerName.default('mcip-router.dev/export-controller'),
  /** How often everything is re-checked even without changes (writes happen only on difference). */
  resyncMs: z.number().int().min(1000).default(60_000),
  /** After the last member stops exporting a pool: how long its InferencePoolImports stay before they are deleted. */
  withdrawalGraceMs: z.number().int().min(0).default(30_000),
  leaderElection: leaderElectionSchema('mcip-router-export-controller'),
});

export type ExportControllerConfig = z.output<typeof exportControllerSchema>;
