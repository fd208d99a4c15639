/**
 * The Endpoint Picker role in the snapshot: every multi-cluster InferencePool (one
 * whose endpointPickerRef names this router's Service, in endpointPicker.namespace)
 * becomes a rule exactly like an HTTPRoute rule with its declared backends as
 * backendRefs, keyed by the picker port its endpointPickerRef names. Whatever is
 * wrong with a pool excludes that pool only, with a diagnostic naming the pool, the
 * field and the entry. Pure, like the rest of the builder.
 */
import type { PickerAnswer } from '../config/endpoint-picker-schema.js';
import { ANSWER_ANNOTATION, BACKENDS_ANNOTATION, decodeAnswer, decodeBackends } from '../model/decode-picker-pool.js';
import { GROUP_GATEWAY, type InferencePool } from '../model/types.js';
import { lookup, nsName, type BuildContext } from './context.js';
import { backendGroup, expandLocalRef, type BackendOwner, type CandidateResolver } from './expand.js';
import type { BackendGroup, PickerPool } from './types.js';

/** What a gateway controller does with an answer that is not one of the pool's own pods. */
interface KnownController {
  readonly gateway: string;
  /** Why a direct answer cannot work with it (undefined: direct answers are followed). */
  readonly needsRelay?: string;
  /** Why a relay answer cannot work with it (undefined: it forwards the relay token). */
  readonly needsDirect?: string;
}

/** Gateway controllers (GatewayClass spec.controllerName) whose handling of a picker's answer is known. */
export const KNOWN_CONTROLLERS: Readonly<Record<string, KnownController>> = {
  'istio.io/gateway-controller': { gateway: 'Istio', needsRelay: 'its override_host load balancing skips a destination that is not one of the pool\'s pods and round-robins to a pool pod instead' },
  'agentgateway.dev/agentgateway': { gateway: 'agentgateway', needsRelay: 'it validates the destination against the pool\'s pods and answers 503 for any other' },
  // agentgateway as kgateway 2.1 installs it (its own GatewayClass controller name).
  'kgateway.dev/agentgateway': { gateway: 'agentgateway (kgateway)', needsRelay: 'it validates the destination against the pool\'s pods and answers 503 for any other' },
  'kgateway.dev/kgateway': { gateway: 'kgateway', needsRelay: 'its subset load balancing falls back to any pool pod for a destination that is not one of them' },
  'gateway.nginx.org/nginx-gateway-controller': {
    gateway: 'NGINX Gateway Fabric',
    needsDirect: 'it copies only the destination header of the answer into its request, so the relay never sees the token and refuses every request',
  },
  'gateway.envoyproxy.io/gatewayclass-controller': { gateway: 'Envoy AI Gateway' },
};

const BACKENDS_PATH = `metadata.annotations["${BACKENDS_ANNOTATION}"]`;
const ANSWER_PATH = `metadata.annotations["${ANSWER_ANNOTATION}"]`;

/** The label of a multi-cluster pool in metrics (route=), /debug/routes, --check and traces. */
export function pickerRouteLabel(namespace: string, name: string): string {
  return `InferencePool/${namespace}/${name}`;
}

/** The multi-cluster pools of this router and their rules, by picker port. */
export function buildPickerPools(ctx: BuildContext, resolver: CandidateResolver): ReadonlyMap<number, PickerPool> {
  const cfg = ctx.config.endpointPicker;
  const out = new Map<number, PickerPool>();
  const local = ctx.clusters.get(ctx.localCluster);
  if (cfg.ports.length === 0 || cfg.namespace === undefined || cfg.serviceName === undefined || local === undefined) return out;
  const inNamespace = local.pools.get(cfg.namespace);
  if (inNamespace === undefined) return out;
  const mine = [...inNamespace.values()]
    .filter((p) => {
      const ref = p.spec.endpointPickerRef;
      return ref !== undefined && ref.group === '' && ref.kind === 'Service' && ref.name === cfg.serviceName;
    })
    .sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
  const names = new Set(mine.map((p) => p.metadata.name));
  const subject = (p: InferencePool): string => `${ctx.localCluster}: InferencePool ${nsName(p.metadata.namespace, p.metadata.name)}`;
  const refuse = (p: InferencePool, path: string, reason: string, message: string): void => {
    ctx.diagnostics.add({ severity: 'error', subject: subject(p), path, reason, message: `${message}; the multi-cluster pool is left out, requests on its picker port get 503` });
  };

  // Ports first: two pools claiming one port are both left out.
  const byPort = new Map<number, InferencePool[]>();
  for (const p of mine) {
    const port = p.spec.endpointPickerRef!.port?.number;
    if (port === undefined) {
      refuse(p, 'spec.endpointPickerRef.port', 'PickerPortMissing', 'set endpointPickerRef.port: Envoy AI Gateway and kgateway would default to 9002, and the router tells pools apart by port');
      continue;
    }
    if (!cfg.ports.includes(port)) {
      refuse(p, 'spec.endpointPickerRef.port.number', 'PickerPortUnknown', `port ${port} is not one of endpointPicker.ports (${cfg.ports.join(', ')})`);
      continue;
    }
    byPort.set(port, [...(byPort.get(port) ?? []), p]);
  }
  for (const [port, pools] of byPort) {
    if (pools.length > 1) {
      const all = pools.map((p) => nsName(p.metadata.namespace, p.metadata.name)).join(', ');
      for (const p of pools) refuse(p, 'spec.endpointPickerRef.port.number', 'PickerPortConflict', `picker port ${port} is claimed by ${all}: one port serves one pool`);
      continue;
    }
    const built = buildOne(ctx, resolver, pools[0]!, port, names, cfg.defaultAnswer, refuse);
    if (built !== undefined) out.set(port, built);
  }
  return out;
}

type Refuse = (p: InferencePool, path: string, reason: string, message: string) => void;

function buildOne(
  ctx: BuildContext,
  resolver: CandidateResolver,
  pool: InferencePool,
  port: number,
  multiCluster: ReadonlySet<string>,
  defaultAnswer: PickerAnswer,
  refuse: Refuse,
): PickerPool | undefined {
  const { namespace, name } = pool.metadata;
  const backends = decodeBackends(pool.metadata.annotations[BACKENDS_ANNOTATION]);
  if (!backends.ok) return void refuse(pool, BACKENDS_PATH, backends.reason, backends.message);
  const cycle = backends.value.find((b) => b.kind === 'InferencePool' && multiCluster.has(b.name));
  if (cycle !== undefined) {
    return void refuse(pool, BACKENDS_PATH, 'BackendCycle', `entry InferencePool/${cycle.name} of annotation ${BACKENDS_ANNOTATION} is itself a multi-cluster pool of this router (its Endpoint Picker is this router)`);
  }
  const answer = decodeAnswer(pool.metadata.annotations[ANSWER_ANNOTATION], defaultAnswer);
  if (!answer.ok) return void refuse(pool, ANSWER_PATH, answer.reason, answer.message);
  const relayPort = ctx.config.endpointPicker.relay.port;
  if (answer.value === 'relay' && !pool.spec.targetPorts.some((t) => t.number === relayPort)) {
    return void refuse(pool, 'spec.targetPorts', 'RelayPortNotTargeted', `relay answers name <pod IP>:${relayPort} (endpointPicker.relay.port), which the gateway accepts only when it is one of the pool's targetPorts (${pool.spec.targetPorts.map((t) => t.number).join(', ')})`);
  }
  const gateways = detectGateways(ctx, pool, answer.value, refuse);
  if (gateways === undefined) return undefined;
  const subject = `${ctx.localCluster}: InferencePool ${nsName(namespace, name)}`;
  const groups: BackendGroup[] = backends.value.map((b, j) => {
    const owner: BackendOwner = { subject, label: `entry ${b.kind}/${b.name} of annotation ${BACKENDS_ANNOTATION} of InferencePool ${nsName(namespace, name)}`, path: `${BACKENDS_PATH}[${j}]` };
    const ref = { group: b.group, kind: b.kind, namespace, name: b.name };
    return backendGroup(ctx, owner, ref, b.weight, expandLocalRef(ctx, resolver, b.kind, namespace, b.name));
  });
  const totalWeight = groups.reduce((s, g) => s + g.weight, 0);
  return {
    port,
    pool: { namespace, name },
    answer: answer.value,
    failureMode: pool.spec.endpointPickerRef!.failureMode,
    gateways,
    rule: { route: { namespace, name }, kind: 'InferencePool', index: 0, backends: groups, totalWeight },
  };
}

/**
 * The gateways that accepted the pool (status.parents[]) and their controllers. A direct
 * answer to a gateway that only routes to the pool's own pods would be misrouted or
 * refused: the pool is then left out (undefined) with an error naming the fix.
 */
function detectGateways(ctx: BuildContext, pool: InferencePool, answer: PickerAnswer, refuse: Refuse): PickerPool['gateways'] | undefined {
  const local = ctx.clusters.get(ctx.localCluster)!;
  const subject = `${ctx.localCluster}: InferencePool ${nsName(pool.metadata.namespace, pool.metadata.name)}`;
  const out: { gateway: string; controller?: string }[] = [];
  const parents = pool.status.parents;
  for (let i = 0; i < parents.length; i++) {
    const ref = parents[i]!.parentRef;
    if (ref.group !== GROUP_GATEWAY || ref.kind !== 'Gateway') continue;
    const ns = ref.namespace ?? pool.metadata.namespace;
    const key = nsName(ns, ref.name);
    const path = `status.parents[${i}].parentRef`;
    const gw = lookup(local.gateways, ns, ref.name);
    const cls = gw === undefined ? undefined : local.gatewayClasses.get(gw.spec.gatewayClassName);
    if (cls === undefined) {
      const missing = gw === undefined ? `Gateway ${key}` : `GatewayClass ${gw.spec.gatewayClassName}`;
      ctx.diagnostics.add({ severity: 'info', subject, path, reason: 'GatewayNotDetected', message: `${missing} is not among cluster ${ctx.localCluster}'s objects: which gateway calls this pool, and whether the "${answer}" answer suits it, is not checked` });
      out.push({ gateway: key });
      continue;
    }
    const controller = cls.spec.controllerName;
    out.push({ gateway: key, controller });
    const known = KNOWN_CONTROLLERS[controller];
    if (known?.needsRelay !== undefined && answer === 'direct') {
      refuse(pool, ANSWER_PATH, 'DirectAnswerMisroutes', `Gateway ${key} (GatewayClass ${cls.metadata.name}, controller ${controller}: ${known.gateway}) needs relay answers: ${known.needsRelay}; set ${ANSWER_ANNOTATION}: relay`);
      return undefined;
    }
    if (known?.needsDirect !== undefined && answer === 'relay') {
      refuse(pool, ANSWER_PATH, 'RelayAnswerDropped', `Gateway ${key} (GatewayClass ${cls.metadata.name}, controller ${controller}: ${known.gateway}) needs direct answers: ${known.needsDirect}; set ${ANSWER_ANNOTATION}: direct`);
      return undefined;
    }
    if (known === undefined) {
      ctx.diagnostics.add({ severity: 'info', subject, path, reason: 'GatewayControllerUnknown', message: `Gateway ${key} runs controller ${controller}, whose handling of a picker's destination is not known to the router; "${answer}" answers are not checked against it` });
    } else if (controller === 'gateway.nginx.org/nginx-gateway-controller' && answer === 'direct' && ctx.mode === 'Parent') {
      ctx.diagnostics.add({ severity: 'warning', subject, path: ANSWER_PATH, reason: 'DirectAnswerPlaintext', message: `Gateway ${key} (NGINX Gateway Fabric) proxies to a direct answer over plain HTTP: in Parent mode the remote gateways are reached without TLS (relay answers, which would carry TLS, do not work behind it)` });
    } else if (controller === 'gateway.envoyproxy.io/gatewayclass-controller' && pool.spec.endpointPickerRef!.failureMode === 'FailOpen') {
      ctx.diagnostics.add({ severity: 'warning', subject, path: 'spec.endpointPickerRef.failureMode', reason: 'FailOpenIgnored', message: `Gateway ${key} (Envoy AI Gateway) always fails closed: failureMode FailOpen has no effect when the router cannot be reached` });
    }
  }
  return out;
}
