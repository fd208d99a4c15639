/** Import-controller duties (InferencePoolImport status), Gateway API status and leader election: what src/runtime/router.ts wires. */
export { startImportController, defaultIdentity, type ControllerDuty, type ImportControllerHandle, type ImportControllerOptions, type ReconcileReport } from './import-controller.js';
export { planImportStatuses, MAX_CONTROLLERS, type ImportStatusPlan, type RawControllerEntry } from './import-status.js';
export { LeaderElector, createLeaseClient, type LeaderElectorOptions, type LeaseClient } from './leader-election.js';
export { ImportStatusWriter, createImportStatusClient, type ImportStatusClient, type WriteOutcome, type WriteResult } from './status-writer.js';
export { createGatewayStatusDuty, type GatewayStatusDuty, type GatewayReconcileReport } from './gateway-controller.js';
export { createGatewayStatusClient, type GatewayStatusClient } from './gateway-status-client.js';
export { planGatewayStatuses, gatewayAddresses, type GatewayStatusPlans } from './gateway-status.js';
export { GatewayStatusWriter, type GatewayWriteOutcome, type GatewayWriteResult } from './gateway-status-writer.js';
