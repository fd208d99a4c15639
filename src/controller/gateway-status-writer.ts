/**
 * GatewayStatusWriter: applies the Gateway API status plans to the API server.
 *
 * - GatewayClass and Gateway: our condition types are merged into
 *   status.conditions (other types kept in place); a Gateway's addresses and
 *   listeners are ours as its class's controller.
 * - HTTPRoute: only our status.parents[] entries (our controllerName, a served
 *   Gateway) are replaced or removed; every other entry is written back as read.
 * - lastTransitionTime is kept while a condition's status holds.
 * - No request when the cached object already shows the plan (HTTPRoutes) or
 *   when neither the plan nor the object changed since our last look
 *   (Gateways); after a GET, no write when the live object matches.
 * - Writes are merge-patches of /status carrying the read resourceVersion;
 *   409 Conflict -> re-read and retry (bounded). A live object of a newer
 *   generation than the plan is left for the next reconcile ('stale').
 */
import type { Logger } from 'pino';
import { GROUP_GATEWAY, type HTTPRoute, type ParentReference } from '../model/types.js';
import { httpStatusOf } from '../sources/kubernetes/api-errors.js';
import type { ClassPlan, GatewayPlan, GatewayStatusBody, RawListenerStatus } from './gateway-status.js';
import { carryTransitionTimes, conditionFromModel, sameEntry, type RawCondition } from './import-status.js';
import type { RawRouteParentStatus, RoutePlan } from './route-status.js';
import { normalRef, ownsEntry, sameRef } from './route-status.js';
import type { GatewayApiKind, GatewayStatusClient, RawObject } from './gateway-status-client.js';

/** Gateway API caps HTTPRoute status.parents at 32 entries. */
export const MAX_ROUTE_PARENTS = 32;

export type GatewayWriteOutcome =
  | 'unchanged' // already as planned: nothing written
  | 'written'
  | 'gone' // the object no longer exists
  | 'stale' // the live object is of a newer generation than the plan: the next reconcile writes it
  | 'full' // an HTTPRoute with 32 parents, none of them ours to replace
  | 'conflict'; // still conflicting after every retry

export interface GatewayWriteResult {
  readonly kind: GatewayApiKind;
  readonly namespace: string;
  readonly name: string;
  readonly outcome: GatewayWriteOutcome;
  /** Requests to the API server (GETs and PATCHes). */
  readonly requests: number;
}

export interface GatewayStatusWriterOptions {
  readonly client: GatewayStatusClient;
  readonly controllerName: string;
  readonly logger?: Logger;
  /** Re-reads after a 409 before giving up (default 5). */
  readonly maxConflictRetries?: number;
  readonly now: () => string;
}

/** What the next status is, given the live object; undefined = the live object already shows it. */
type Merge = (live: RawObject) => { status: Record<string, unknown> } | 'full' | undefined;

const conditionsOf = (v: unknown): RawCondition[] => (Array.isArray(v) ? (v as RawCondition[]) : []);

/** Our condition types replaced in place (times carried), other types kept, new ones appended. */
function mergeConditions(live: readonly RawCondition[], desired: readonly RawCondition[], now: string): RawCondition[] {
  const carried = carryTransitionTimes(desired, live, now);
  const byType = new Map(carried.map((c) => [c.type, c]));
  const merged = live.map((c) => byType.get(c.type) ?? c);
  for (const c of carried) if (!live.some((l) => l.type === c.type)) merged.push(c);
  return merged;
}

/** A status.parents[] entry as read from the API server, with the defaults the CRD applies. */
function rawParentRef(entry: Record<string, unknown>): ParentReference {
  const r = (entry.parentRef ?? {}) as Record<string, unknown>;
  const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
  return {
    group: str(r.group) ?? GROUP_GATEWAY,
    kind: str(r.kind) ?? 'Gateway',
    name: str(r.name) ?? '',
    ...(str(r.namespace) !== undefined ? { namespace: str(r.namespace) } : {}),
    ...(str(r.sectionName) !== undefined ? { sectionName: str(r.sectionName) } : {}),
    ...(typeof r.port === 'number' ? { port: r.port } : {}),
  };
}

const withoutTimes = (entries: readonly { parentRef: unknown; controllerName?: string; conditions: readonly RawCondition[] }[]): unknown =>
  entries.map((e) => ({ ...e, conditions: e.conditions.map(({ lastTransitionTime: _t, ...c }) => c) }));

export class GatewayStatusWriter {
  private readonly retries: number;
  /** Gateway "ns/name" -> the resourceVersion and plan of our last look (write or match). */
  private readonly seen = new Map<string, { resourceVersion: string; plan: string }>();

  constructor(private readonly o: GatewayStatusWriterOptions) {
    this.retries = o.maxConflictRetries ?? 5;
  }

  /** A GatewayClass, read by the list just before (its status is current): no GET needed for the first attempt. */
  applyClass(plan: ClassPlan, listed: RawObject): Promise<GatewayWriteResult> {
    return this.apply('GatewayClass', '', plan.name, undefined, (live) => {
      const before = conditionsOf(live.status?.conditions);
      const next = mergeConditions(before, plan.conditions, this.o.now());
      return sameEntry(before, next) ? undefined : { status: { conditions: next } };
    }, listed);
  }

  async applyGateway(plan: GatewayPlan, cachedResourceVersion: string | undefined): Promise<GatewayWriteResult> {
    const key = `${plan.namespace}/${plan.name}`;
    const planText = JSON.stringify(plan.status);
    const last = this.seen.get(key);
    if (last && cachedResourceVersion !== undefined && last.resourceVersion === cachedResourceVersion && last.plan === planText) {
      return { kind: 'Gateway', namespace: plan.namespace, name: plan.name, outcome: 'unchanged', requests: 0 };
    }
    const result = await this.apply('Gateway', plan.namespace, plan.name, plan.generation, (live) => {
      const next = this.gatewayStatus(plan.status, live);
      const current = { addresses: live.status?.addresses ?? [], conditions: live.status?.conditions ?? [], listeners: live.status?.listeners ?? [] };
      return sameEntry(current, next) ? undefined : { status: next as unknown as Record<string, unknown> };
    }, undefined, (rv) => this.seen.set(key, { resourceVersion: rv, plan: planText }));
    if (result.outcome !== 'unchanged' && result.outcome !== 'written') this.seen.delete(key);
    return result;
  }

  /** True when the cached route already shows exactly our planned entries. */
  routeUpToDate(plan: RoutePlan, cached: HTTPRoute | undefined): boolean {
    const parents = cached?.status.parents;
    if (!parents) return false;
    const ours = parents
      .filter((p) => ownsEntry(p, this.o.controllerName, plan.owned, plan.namespace))
      .map((p) => ({ parentRef: normalRef(p.parentRef, plan.namespace), controllerName: p.controllerName, conditions: p.conditions.map(conditionFromModel) }));
    return sameEntry(withoutTimes(ours), withoutTimes(plan.parents));
  }

  async applyRoute(plan: RoutePlan, cached: HTTPRoute | undefined): Promise<GatewayWriteResult> {
    if (this.routeUpToDate(plan, cached)) return { kind: 'HTTPRoute', namespace: plan.namespace, name: plan.name, outcome: 'unchanged', requests: 0 };
    return this.apply('HTTPRoute', plan.namespace, plan.name, plan.generation, (live) => {
      const entries = Array.isArray(live.status?.parents) ? (live.status.parents as Record<string, unknown>[]) : [];
      const mine = (e: Record<string, unknown>): boolean =>
        ownsEntry({ parentRef: rawParentRef(e), controllerName: e.controllerName as string | undefined }, this.o.controllerName, plan.owned, plan.namespace);
      const others = entries.filter((e) => !mine(e));
      const current = entries.filter(mine);
      const now = this.o.now();
      const desired: RawRouteParentStatus[] = plan.parents.map((p) => {
        const before = current.find((e) => sameRef(normalRef(rawParentRef(e), plan.namespace), p.parentRef));
        return { ...p, conditions: carryTransitionTimes(p.conditions, conditionsOf(before?.conditions), now) };
      });
      if (sameEntry(current, desired)) return undefined;
      if (others.length + desired.length > MAX_ROUTE_PARENTS && desired.length > 0) return 'full';
      return { status: { parents: [...others, ...desired] } };
    });
  }

  private gatewayStatus(planned: GatewayStatusBody, live: RawObject): GatewayStatusBody {
    const now = this.o.now();
    const liveListeners = Array.isArray(live.status?.listeners) ? (live.status.listeners as RawListenerStatus[]) : [];
    return {
      addresses: planned.addresses,
      conditions: mergeConditions(conditionsOf(live.status?.conditions), planned.conditions, now),
      listeners: planned.listeners.map((l) => ({
        ...l,
        conditions: carryTransitionTimes(l.conditions, conditionsOf(liveListeners.find((x) => x?.name === l.name)?.conditions), now),
      })),
    };
  }

  private async apply(
    kind: GatewayApiKind,
    namespace: string,
    name: string,
    generation: number | undefined,
    merge: Merge,
    first?: RawObject,
    onCurrent?: (resourceVersion: string) => void,
  ): Promise<GatewayWriteResult> {
    const subject = `${kind} ${namespace === '' ? name : `${namespace}/${name}`}`;
    let requests = 0;
    const result = (outcome: GatewayWriteOutcome): GatewayWriteResult => ({ kind, namespace, name, outcome, requests });
    let given = first;
    for (let attempt = 1; attempt <= this.retries + 1; attempt++) {
      let live = given;
      given = undefined;
      if (!live) {
        requests++;
        live = await this.o.client.get(kind, namespace, name);
      }
      if (!live) return result('gone');
      const liveGeneration = live.metadata?.generation;
      if (generation !== undefined && liveGeneration !== undefined && liveGeneration > generation) return result('stale');
      const next = merge(live);
      if (next === undefined) {
        if (live.metadata?.resourceVersion) onCurrent?.(live.metadata.resourceVersion);
        return result('unchanged');
      }
      if (next === 'full') {
        this.o.logger?.warn({ object: subject }, `${subject} already has ${MAX_ROUTE_PARENTS} status.parents entries; cannot add ours (${this.o.controllerName})`);
        return result('full');
      }
      try {
        requests++;
        const written = await this.o.client.patchStatus(kind, namespace, name, { metadata: { resourceVersion: live.metadata?.resourceVersion }, ...next });
        if (written.metadata?.resourceVersion) onCurrent?.(written.metadata.resourceVersion);
        this.o.logger?.info({ object: subject, attempt }, `${subject} status written`);
        return result('written');
      } catch (err) {
        const status = httpStatusOf(err);
        if (status === 404) return result('gone');
        if (status !== 409) throw err;
        this.o.logger?.debug({ object: subject, attempt }, 'status write conflicted (409), re-reading');
      }
    }
    this.o.logger?.warn({ object: subject }, `${subject} status write still conflicting after ${this.retries} retries`);
    return result('conflict');
  }
}
