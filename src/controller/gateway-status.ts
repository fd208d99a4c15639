/**
 * Gateway API status of the router's own objects, as a pure function of the
 * routing snapshot and the local cluster's objects:
 *
 * - GatewayClasses whose spec.controllerName is ours: Accepted (False with
 *   InvalidParameters when they carry a parametersRef: the router reads none).
 * - Served Gateways (config `gateways`) whose class is ours: status.addresses,
 *   Accepted / Programmed and per listener supportedKinds, attachedRoutes and
 *   Accepted / Conflicted / Programmed / ResolvedRefs (listeners.ts judges them).
 * - HTTPRoutes: our status.parents[] entries (route-status.ts).
 *
 * Conditions carry observedGeneration; lastTransitionTime is left empty here
 * and filled by the writer from the live object (kept while the status holds).
 */
import type { RouterConfig } from '../config/schema.js';
import type { Gateway, HTTPRoute, KubeObject, Service } from '../model/types.js';
import { judgeListeners, type ListenerCondition } from '../snapshot/listeners.js';
import type { Diagnostic, RoutingSnapshot } from '../snapshot/types.js';
import { condition, type Generation, type RawCondition } from './import-status.js';
import { clip, planRouteStatuses, type RoutePlan } from './route-status.js';

export const MAX_STATUS_ADDRESSES = 16;

/** What the writer needs of a GatewayClass (read from the API server, not watched). */
export interface GatewayClassView {
  readonly name: string;
  readonly controllerName: string;
  readonly generation?: number;
  readonly hasParametersRef: boolean;
}

export interface RawAddress {
  readonly type: 'IPAddress' | 'Hostname';
  readonly value: string;
}

export interface RawListenerStatus {
  name: string;
  supportedKinds: { group: string; kind: string }[];
  attachedRoutes: number;
  conditions: RawCondition[];
}

export interface GatewayStatusBody {
  addresses: RawAddress[];
  conditions: RawCondition[];
  listeners: RawListenerStatus[];
}

export interface ClassPlan {
  readonly name: string;
  readonly conditions: RawCondition[];
}

export interface GatewayPlan {
  readonly namespace: string;
  readonly name: string;
  readonly generation?: number;
  readonly status: GatewayStatusBody;
}

export interface GatewayStatusInput {
  readonly controllerName: string;
  readonly classes: readonly GatewayClassView[];
  /** config.gateways. */
  readonly served: readonly { readonly namespace: string; readonly name: string }[];
  /** The local cluster's objects (Gateways, HTTPRoutes, Services). */
  readonly localObjects: readonly KubeObject[];
  readonly snapshot: Pick<RoutingSnapshot, 'routes' | 'diagnostics'>;
  readonly listeners: RouterConfig['gatewayListeners'];
  readonly addresses: readonly RawAddress[];
}

export interface GatewayStatusPlans {
  readonly classes: readonly ClassPlan[];
  readonly gateways: readonly GatewayPlan[];
  readonly routes: readonly RoutePlan[];
}

const key = (namespace: string, name: string): string => `${namespace}/${name}`;
const genOf = (generation: number | undefined): Generation => (generation !== undefined ? { observedGeneration: generation } : {});

export function planGatewayStatuses(input: GatewayStatusInput): GatewayStatusPlans {
  const ours = input.classes.filter((c) => c.controllerName === input.controllerName);
  const classNames = new Set(ours.map((c) => c.name));
  const classes = ours.map((c): ClassPlan => ({
    name: c.name,
    conditions: [
      c.hasParametersRef
        ? condition('Accepted', false, 'InvalidParameters', 'spec.parametersRef is set, but this controller takes no parameters: remove it', genOf(c.generation))
        : condition('Accepted', true, 'Accepted', `handled by ${input.controllerName}`, genOf(c.generation)),
    ],
  }));
  const gatewaysByKey = new Map<string, Gateway>();
  const routes: HTTPRoute[] = [];
  for (const o of input.localObjects) {
    if (o.kind === 'Gateway') gatewaysByKey.set(key(o.metadata.namespace, o.metadata.name), o);
    else if (o.kind === 'HTTPRoute') routes.push(o);
  }
  const claimed = new Map<string, Gateway>();
  for (const s of input.served) {
    const gw = gatewaysByKey.get(key(s.namespace, s.name));
    // A class this controller does not accept (parametersRef) still names it; its Gateways report that.
    if (gw && classNames.has(gw.spec.gatewayClassName)) claimed.set(key(s.namespace, s.name), gw);
  }
  const routePlans = planRouteStatuses({
    controllerName: input.controllerName,
    routes,
    claimed: new Set(claimed.keys()),
    owned: new Set(input.served.map((s) => key(s.namespace, s.name))),
    snapshot: input.snapshot,
  });
  const rejectedClass = new Set(ours.filter((c) => c.hasParametersRef).map((c) => c.name));
  const gateways = [...claimed.values()].map((gw) =>
    gatewayPlan(gw, input, routePlans.attachedRoutes, rejectedClass.has(gw.spec.gatewayClassName)),
  );
  return { classes, gateways, routes: routePlans.plans };
}

function toCondition(type: string, c: ListenerCondition, gen: Generation): RawCondition {
  return condition(type, c.ok, c.reason, c.message, gen);
}

function gatewayPlan(gw: Gateway, input: GatewayStatusInput, attached: ReadonlyMap<string, number>, classRejected: boolean): GatewayPlan {
  const { namespace, name, generation } = gw.metadata;
  const gen = genOf(generation);
  const verdicts = judgeListeners(gw, input.listeners);
  const listeners = verdicts.map((v): RawListenerStatus => ({
    name: v.name,
    supportedKinds: v.supportedKinds.map((k) => ({ group: k.group, kind: k.kind })),
    attachedRoutes: attached.get(`${key(namespace, name)}/${v.name}`) ?? 0,
    conditions: [
      toCondition('Accepted', v.accepted, gen),
      // Conflicted is negative polarity: True means a conflict.
      condition('Conflicted', !v.conflicted.ok, v.conflicted.reason, v.conflicted.message, gen),
      toCondition('Programmed', v.programmed, gen),
      toCondition('ResolvedRefs', v.resolvedRefs, gen),
    ],
  }));
  const invalid = verdicts.filter((v) => !v.accepted.ok);
  const own = gatewayDiagnostics(input.snapshot.diagnostics, namespace, name);
  let accepted: RawCondition;
  if (classRejected) {
    accepted = condition('Accepted', false, 'InvalidParameters', `GatewayClass ${gw.spec.gatewayClassName} is not accepted (it carries a parametersRef)`, gen);
  } else if (own.Accepted) {
    accepted = condition('Accepted', false, own.Accepted.reason, own.Accepted.message, gen);
  } else if (invalid.length === 0) {
    accepted = condition('Accepted', true, 'Accepted', 'the Gateway is served by the router', gen);
  } else {
    const text = clip(invalid.map((v) => `listener "${v.name}": ${v.accepted.message}`).join('; '));
    const some = invalid.length < verdicts.length;
    accepted = condition('Accepted', some, 'ListenersNotValid', some ? `the other listeners are served; ${text}` : text, gen);
  }
  const programmedListeners = verdicts.filter((v) => v.programmed.ok).length;
  // A requested address is honoured only when the reported ones include it (by type, and value when given).
  const unusable = gw.spec.addresses.filter((r) => !input.addresses.some((a) => a.type === r.type && (r.value === undefined || a.value === r.value)));
  let programmed: RawCondition;
  if (accepted.status === 'False') {
    programmed = condition('Programmed', false, 'Invalid', `not accepted: ${accepted.message}`, gen);
  } else if (own.Programmed) {
    programmed = condition('Programmed', false, own.Programmed.reason, own.Programmed.message, gen);
  } else if (unusable.length > 0) {
    const asked = unusable.map((a) => `${a.type} ${a.value ?? '(any)'}`).join(', ');
    programmed = condition(
      'Programmed',
      false,
      'AddressNotUsable',
      `spec.addresses asks for ${asked}, which the router cannot assign: the Gateway's address is the Envoy Service's (${input.addresses.map((a) => a.value).join(', ') || 'none yet'}); remove spec.addresses or give the Service that address`,
      gen,
    );
  } else if (input.addresses.length === 0) {
    programmed = condition(
      'Programmed',
      false,
      'AddressNotAssigned',
      'no address known for the Envoy in front of the router: set controller.gatewayStatus.addressService (the chart sets it to its Service) or .addresses, or wait for the Service to get one',
      gen,
    );
  } else if (programmedListeners === 0) {
    programmed = condition('Programmed', false, 'Invalid', 'no listener is programmed', gen);
  } else {
    programmed = condition('Programmed', true, 'Programmed', `served by the Envoy at ${input.addresses.map((a) => a.value).join(', ')}`, gen);
  }
  return { namespace, name, ...(generation !== undefined ? { generation } : {}), status: { addresses: [...input.addresses], conditions: [accepted, programmed], listeners } };
}

/** Gateway-level diagnostics (no listener) that turn a condition False, by condition. */
function gatewayDiagnostics(diagnostics: readonly Diagnostic[], namespace: string, name: string): Partial<Record<'Accepted' | 'Programmed', Diagnostic>> {
  const out: Partial<Record<'Accepted' | 'Programmed', Diagnostic>> = {};
  for (const d of diagnostics) {
    const t = d.status;
    if (!t || t.kind !== 'Gateway' || t.namespace !== namespace || t.name !== name || t.listener !== undefined) continue;
    if ((t.condition === 'Accepted' || t.condition === 'Programmed') && !out[t.condition]) out[t.condition] = d;
  }
  return out;
}

/**
 * The addresses reported in status.addresses: the configured ones, then the
 * address Service's load-balancer ingress (IP or hostname), else its external
 * IPs, else its cluster IP.
 */
export function gatewayAddresses(settings: RouterConfig['controller']['gatewayStatus'], services: readonly Service[]): RawAddress[] {
  const out: RawAddress[] = settings.addresses.map((a) => ({ type: a.type, value: a.value }));
  const ref = settings.addressService;
  const svc = ref && services.find((s) => s.metadata.namespace === ref.namespace && s.metadata.name === ref.name);
  if (svc) {
    const ingress: RawAddress[] = svc.status.loadBalancer.ingress.flatMap((i): RawAddress[] =>
      i.ip ? [{ type: 'IPAddress', value: i.ip }] : i.hostname ? [{ type: 'Hostname', value: i.hostname }] : [],
    );
    const external: RawAddress[] = svc.spec.externalIPs.map((ip) => ({ type: 'IPAddress', value: ip }));
    const clusterIP = svc.spec.clusterIP;
    const internal: RawAddress[] = clusterIP && clusterIP !== 'None' ? [{ type: 'IPAddress', value: clusterIP }] : [];
    out.push(...(ingress.length > 0 ? ingress : external.length > 0 ? external : internal));
  }
  const seen = new Set<string>();
  return out.filter((a) => !seen.has(`${a.type}/${a.value}`) && seen.add(`${a.type}/${a.value}`)).slice(0, MAX_STATUS_ADDRESSES);
}
