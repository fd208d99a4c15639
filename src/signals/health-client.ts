/**
 * The grpc.health.v1.Health client, built from src/protocol/services.ts's
 * health service definition (protos/grpc/health/v1/health.proto).
 */
import { makeGenericClientConstructor, type ChannelCredentials, type ChannelOptions, type Client, type ServiceError } from '@grpc/grpc-js';
import { healthService, type HealthCheckRequest, type HealthCheckResponse } from '../protocol/services.js';

export interface HealthClient extends Client {
  Check(
    request: HealthCheckRequest,
    options: { deadline: Date },
    callback: (err: ServiceError | null, response?: HealthCheckResponse) => void,
  ): unknown;
}

type HealthClientCtor = new (address: string, creds: ChannelCredentials, options?: ChannelOptions) => HealthClient;

let ctor: HealthClientCtor | undefined;

export function createHealthClient(address: string, creds: ChannelCredentials, options: ChannelOptions): HealthClient {
  ctor ??= makeGenericClientConstructor(healthService, 'Health') as unknown as HealthClientCtor;
  return new ctor(address, creds, options);
}
