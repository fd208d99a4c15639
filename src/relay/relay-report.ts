/**
 * What the relay verifier reports: mcip_relay_forwards_total{kind} and
 * mcip_relay_refusals_total{reason} (every label value present from the start),
 * and a warning per refusal reason at most every WARN_INTERVAL_MS with the count
 * since. Nothing is logged per request at info. Never the token.
 */
import type { Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import type { RelayTargetKind } from '../credentials/relay-token.js';
import { WARN_INTERVAL_MS } from '../extproc/answer-report.js';
import { RELAY_REFUSALS, type RelayRefusalReason } from './relay-judge.js';

const KINDS: readonly RelayTargetKind[] = ['endpoint', 'parent'];

function counter<L extends string>(registry: Registry, name: string, help: string, label: L): Counter<L> {
  const existing = registry.getSingleMetric(name);
  if (existing) return existing as Counter<L>;
  return new Counter({ name, help, labelNames: [label], registers: [registry] });
}

export interface RefusalContext {
  readonly cluster?: string;
  readonly target?: string;
  /** Why the relay key file's current content is not in use (forged tokens may follow from it). */
  readonly keyFileProblem?: string;
}

export class RelayReport {
  private readonly forwards: Counter<'kind'>;
  private readonly refusals: Counter<'reason'>;
  /** Per refusal reason (and 'misconfigured'): when it was last logged and how many since. */
  private readonly last = new Map<RelayRefusalReason | 'misconfigured', { at: number; suppressed: number }>();

  constructor(
    registry: Registry,
    private readonly logger: Pick<Logger, 'warn'>,
    private readonly now: () => number = Date.now,
  ) {
    this.forwards = counter(registry, 'mcip_relay_forwards_total', 'Requests the relay forwarded to the destination in their relay token, by kind (endpoint, parent).', 'kind');
    this.refusals = counter(registry, 'mcip_relay_refusals_total', 'Requests the relay refused (403), by reason.', 'reason');
    for (const kind of KINDS) this.forwards.inc({ kind }, 0);
    for (const reason of RELAY_REFUSALS) this.refusals.inc({ reason }, 0);
  }

  forwarded(kind: RelayTargetKind): void {
    this.forwards.inc({ kind });
  }

  refused(reason: RelayRefusalReason, detail: string, context: RefusalContext = {}): void {
    this.refusals.inc({ reason });
    const suppressed = this.suppressed(reason);
    if (suppressed !== undefined) this.logger.warn({ reason, detail, ...context, suppressedSinceLastWarning: suppressed }, 'relay refused a request (403)');
  }

  /** The relay's Envoy sent what its configuration should not let it send (the stream fails: Envoy answers 500). */
  misconfigured(detail: string): void {
    const suppressed = this.suppressed('misconfigured');
    if (suppressed !== undefined) this.logger.warn({ detail, suppressedSinceLastWarning: suppressed }, 'relay stream failed: check the relay Envoy configuration');
  }

  /** undefined while `key` was logged less than WARN_INTERVAL_MS ago (counted), else the count suppressed since. */
  private suppressed(key: RelayRefusalReason | 'misconfigured'): number | undefined {
    const now = this.now();
    const seen = this.last.get(key);
    if (seen !== undefined && now - seen.at < WARN_INTERVAL_MS) {
      seen.suppressed++;
      return undefined;
    }
    this.last.set(key, { at: now, suppressed: 0 });
    return seen?.suppressed ?? 0;
  }
}
