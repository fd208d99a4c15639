/**
 * One ext_proc stream from the relay's Envoy, which sends request headers only
 * (envoy/relay.yaml: every other phase SKIP). Phases: waiting for the request
 * headers, answered (waiting for Envoy's half-close), closed. The request
 * headers are decoded once; the answer is the forward or the refusal of
 * relay-judge.ts. Anything else Envoy sends is a configuration error: the
 * stream ends with INVALID_ARGUMENT, which Envoy (failure_mode_allow false)
 * turns into a 500, never into a forward.
 */
import { status as Status } from '@grpc/grpc-js';
import { decodeRequest, headerValue } from '../protocol/codec.js';
import { RELAY_TOKEN_HEADER } from '../credentials/relay-token.js';
import type { H2ServerCall } from '../transport/server-call.js';
import { judgeRelayRequest, relayForwardAnswer, relayRefusalAnswer, type RelayJudgeDeps } from './relay-judge.js';
import type { RelayReport } from './relay-report.js';

export interface RelayStreamDeps extends RelayJudgeDeps {
  readonly report: RelayReport;
  /** Why the key file's current content is refused, if it is (told with forged tokens). */
  readonly keyFileProblem: () => string | undefined;
  readonly now?: () => number;
  /** A stream that sends no request headers this long is ended (DEADLINE_EXCEEDED). */
  readonly firstMessageTimeoutMs: number;
}

type Phase = 'headers' | 'answered' | 'closed';

export const RELAY_MODE_HINT = 'the relay processes request headers only: every other processing mode of its ext_proc filter must be SKIP or NONE (envoy/relay.yaml)';

export class RelayStream {
  private phase: Phase = 'headers';
  private firstTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly call: H2ServerCall,
    private readonly deps: RelayStreamDeps,
    private readonly onClosed: (s: RelayStream) => void,
  ) {
    call.on('data', this.onMessage);
    call.on('end', this.onHalfClose);
    call.on('cancelled', this.close);
    call.on('error', this.close);
    this.firstTimer = setTimeout(() => {
      this.firstTimer = undefined;
      if (this.phase !== 'headers') return;
      this.call.sendStatus(Status.DEADLINE_EXCEEDED, `no request headers within extProc.firstMessageTimeoutMs (${deps.firstMessageTimeoutMs} ms)`);
      this.close();
    }, deps.firstMessageTimeoutMs);
  }

  private readonly onMessage = (raw: Buffer): void => {
    if (this.phase !== 'headers') {
      if (this.phase === 'answered') this.refuseStream(`a message after the request headers: ${RELAY_MODE_HINT}`);
      return;
    }
    let token: string | undefined;
    try {
      const req = decodeRequest(raw);
      if (req.request !== 'request_headers') {
        this.refuseStream(`${req.request ?? 'an empty message'} before the request headers: ${RELAY_MODE_HINT}`);
        return;
      }
      token = headerValue(req.request_headers?.headers, RELAY_TOKEN_HEADER);
    } catch {
      this.refuseStream('malformed ProcessingRequest');
      return;
    }
    const deps = this.deps;
    clearTimeout(this.firstTimer);
    const j = judgeRelayRequest(token, (deps.now ?? Date.now)(), deps);
    this.phase = 'answered';
    if (j.forward) {
      deps.report.forwarded(j.claim.kind);
      this.call.write(relayForwardAnswer(j.claim));
      return;
    }
    const problem = j.reason === 'forged' ? deps.keyFileProblem() : undefined;
    deps.report.refused(j.reason, j.detail, {
      ...(j.claim ? { cluster: j.claim.cluster, target: j.claim.target } : {}),
      ...(problem ? { keyFileProblem: problem } : {}),
    });
    this.call.write(relayRefusalAnswer(j.reason, j.detail));
  };

  private readonly onHalfClose = (): void => {
    if (this.phase === 'closed') return;
    this.call.end();
    this.close();
  };

  private refuseStream(message: string): void {
    this.deps.report.misconfigured(message);
    this.call.sendStatus(Status.INVALID_ARGUMENT, message);
    this.close();
  }

  /** Idempotent. */
  readonly close = (): void => {
    if (this.phase === 'closed') return;
    this.phase = 'closed';
    clearTimeout(this.firstTimer);
    this.onClosed(this);
  };
}
