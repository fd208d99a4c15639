/**
 * grpc-js service definitions: the ext_proc stream with identity (Buffer)
 * serializers, so the router relays messages between Envoy and EPPs without
 * ever re-encoding them, and the standard gRPC health service.
 */
import { loadSync } from '@grpc/proto-loader';
import type { MethodDefinition, ServiceDefinition } from '@grpc/grpc-js';
import { EXT_PROC_PROCESS_PATH, HEALTH_SERVICE } from './constants.js';
import { HEALTH_PROTO, protosDir } from './proto-files.js';

const identity = (b: Buffer): Buffer => b;

const processMethod: MethodDefinition<Buffer, Buffer> = {
  path: EXT_PROC_PROCESS_PATH,
  requestStream: true,
  responseStream: true,
  requestSerialize: identity,
  requestDeserialize: identity,
  responseSerialize: identity,
  responseDeserialize: identity,
  originalName: 'process',
};

/**
 * envoy.service.ext_proc.v3.ExternalProcessor with raw messages both ways:
 * use it for the router's server (`server.addService`) and its EPP client
 * (`makeGenericClientConstructor(extProcRawService, 'ExternalProcessor')`).
 */
export const extProcRawService = { Process: processMethod } as const satisfies ServiceDefinition;

/** grpc.health.v1.HealthCheckResponse.ServingStatus. */
export const HealthStatus = {
  UNKNOWN: 0,
  SERVING: 1,
  NOT_SERVING: 2,
  SERVICE_UNKNOWN: 3,
} as const;
export type HealthStatus = (typeof HealthStatus)[keyof typeof HealthStatus];

/** grpc.health.v1 messages as this service definition (de)serialises them. */
export interface HealthCheckRequest {
  service: string;
}
export interface HealthCheckResponse {
  /** Numbers on receipt (enums: Number); names or numbers accepted when sending. */
  status: HealthStatus;
}

const healthPackage = loadSync(HEALTH_PROTO, {
  includeDirs: [protosDir()],
  keepCase: true,
  enums: Number,
  defaults: true,
});

/** grpc.health.v1.Health (Check and Watch), loaded from protos/grpc/health/v1/health.proto. */
export const healthService = healthPackage[HEALTH_SERVICE] as ServiceDefinition;
if (!healthService || !('Check' in healthService)) {
  throw new Error(`mcip-router: ${HEALTH_PROTO} does not define ${HEALTH_SERVICE}`);
}
