/** Import-controller duties (InferencePoolImport status) and leader election: what src/main.ts wires. */
export { startImportController, defaultIdentity, type ImportControllerHandle, type ImportControllerOptions, type ReconcileReport } from './import-controller.js';
export { planImportStatuses, MAX_CONTROLLERS, type ImportStatusPlan, type RawControllerEntry } from './import-status.js';
export { LeaderElector, createLeaseClient, type LeaderElectorOptions, type LeaseClient } from './leader-election.js';
export { ImportStatusWriter, createImportStatusClient, type ImportStatusClient, type WriteOutcome, type WriteResult } from './status-writer.js';
