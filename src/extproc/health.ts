/**
 * grpc.health.v1.Health on the ext_proc port, for "" and the ext_proc service
 * name (what gateways probe). NOT_SERVING until the router says it serves, and
 * again once it drains.
 */
import {
  status as GrpcStatus,
  type sendUnaryData,
  type ServerUnaryCall,
  type ServerWritableStream,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js';
import { EXT_PROC_SERVICE } from '../protocol/constants.js';
import { HealthStatus, type HealthCheckRequest, type HealthCheckResponse } from '../protocol/services.js';

const SERVICES: ReadonlySet<string> = new Set(['', EXT_PROC_SERVICE]);

export class HealthState {
  private serving = false;
  private draining = false;
  /** Open Watch streams and the status each was last sent. */
  private readonly watchers = new Map<ServerWritableStream<HealthCheckRequest, HealthCheckResponse>, HealthStatus>();

  /** The status of `service`, or undefined for a service this server does not know. */
  status(service: string): HealthStatus | undefined {
    if (!SERVICES.has(service)) return undefined;
    return this.serving && !this.draining ? HealthStatus.SERVING : HealthStatus.NOT_SERVING;
  }

  setServing(serving: boolean): void {
    this.serving = serving;
    this.notify();
  }

  /** NOT_SERVING for good, and Watch streams are ended so they do not hold connections open. */
  drain(): void {
    this.draining = true;
    this.notify();
    for (const call of this.watchers.keys()) call.end();
    this.watchers.clear();
  }

  readonly handlers: UntypedServiceImplementation = {
    Check: (
      call: ServerUnaryCall<HealthCheckRequest, HealthCheckResponse>,
      callback: sendUnaryData<HealthCheckResponse>,
    ): void => {
      const status = this.status(call.request.service ?? '');
      if (status === undefined) {
        callback({ code: GrpcStatus.NOT_FOUND, details: `unknown service "${call.request.service}"` });
        return;
      }
      callback(null, { status });
    },
    Watch: (call: ServerWritableStream<HealthCheckRequest, HealthCheckResponse>): void => {
      // An unknown service's Watch stays open (it may appear later): SERVICE_UNKNOWN.
      const status = this.status(call.request.service ?? '') ?? HealthStatus.SERVICE_UNKNOWN;
      call.write({ status });
      if (this.draining) {
        call.end();
        return;
      }
      this.watchers.set(call, status);
      const remove = (): void => {
        this.watchers.delete(call);
      };
      call.on('cancelled', remove);
      call.on('error', remove);
      call.on('finish', remove);
    },
  };

  private notify(): void {
    for (const [call, last] of this.watchers) {
      const status = this.status(call.request.service ?? '');
      if (status === undefined || status === last) continue;
      this.watchers.set(call, status);
      call.write({ status });
    }
  }
}
