/** Shared shapes of probe outcomes (health, parent) and their listener. */

/** A probed target's health by the thresholds (threshold.ts). */
export type HealthStatus = 'healthy' | 'unhealthy' | 'unknown';

export interface ProbeOutcome {
  readonly ok: boolean;
  /** The target answered (even with a failure, e.g. NOT_SERVING or HTTP 500). */
  readonly reached: boolean;
  /** Failure reason, a small fixed vocabulary (metric label). */
  readonly reason?: string;
  /** What went wrong, in words, when the reason needs them (a refused destination names host, address and rule). */
  readonly detail?: string;
  /**
   * The target answered but offers no health signal for the probed service
   * (gRPC UNIMPLEMENTED or NOT_FOUND, or the status SERVICE_UNKNOWN): the code,
   * as its gRPC name. Neither a success nor a failure.
   */
  readonly unsupported?: UnsupportedCode;
  /** The failure as the transport reported it, for logs (not shown as the last error). */
  readonly message?: string;
  readonly at: number;
}

/** Answers meaning "no health signal here" (a stock EPP's ext_proc port, an unknown service name). */
export type UnsupportedCode = 'UNIMPLEMENTED' | 'NOT_FOUND' | 'SERVICE_UNKNOWN';

export interface ProbeState {
  /** 'unsupported' while the last answer was {@link ProbeOutcome.unsupported}: no evidence either way. */
  readonly status: HealthStatus | 'unsupported';
  /** With status 'unsupported': the gRPC code of that answer. */
  readonly code?: UnsupportedCode;
  /** Answered at least once, and not `unhealthyThreshold` unanswered probes in a row since. */
  readonly reachable: boolean;
  readonly everReached: boolean;
  /** Clock time of the last completed probe. */
  readonly lastProbeAt?: number;
  readonly lastError?: string;
}

export type ProbeListener = (outcome: ProbeOutcome, state: ProbeState) => void;

/** Splits "host:port" / "[v6]:port" into host (no brackets) and port. */
export function splitHostPort(address: string): { host: string; port: number } {
  const m = /^\[([^\]]+)\]:(\d+)$/.exec(address) ?? /^([^:]+):(\d+)$/.exec(address);
  if (!m) throw new Error(`not host:port: ${address}`);
  return { host: m[1]!, port: Number(m[2]) };
}

/** Formats host and port, bracketing IPv6. */
export function joinHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}
