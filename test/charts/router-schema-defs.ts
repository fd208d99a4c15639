/**
 * The parts of values.schema.json that mirror the router config schema, generated from
 * src/config/schema.ts (zod -> JSON Schema draft-07), so the chart rejects at install time
 * what the router would reject at start. chart.test.ts holds values.schema.json's
 * `definitions` to this; `UPDATE_CHART_SCHEMA=1 npx vitest run test/charts` rewrites them.
 */
import { z } from 'zod';
import {
  clusterProfilesSchema,
  clusterSchema,
  controllerSchema,
  eppSchema,
  execPluginsSchema,
  exportAgentSchema,
  fleetMemberSchema,
  gatewayRefSchema,
  gatewayStatusObject,
  kubernetesSourceSchema,
  parentProbeSchema,
  routerConfigSchema,
} from '../../src/config/schema.js';

type Json = Record<string, unknown>;

/** Drops what JSON Schema validators do not know (zod's "starts_with" format) and zod's safe-integer bounds. */
function clean(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(clean);
  if (typeof v !== 'object' || v === null) return v;
  const out: Json = {};
  for (const [k, x] of Object.entries(v)) {
    if (k === '$schema') continue;
    if (k === 'format' && x === 'starts_with') continue;
    if ((k === 'maximum' || k === 'minimum') && Math.abs(x as number) === Number.MAX_SAFE_INTEGER) continue;
    out[k] = clean(x);
  }
  return out;
}

const generate = (schema: z.ZodType): Json => clean(z.toJSONSchema(schema, { target: 'draft-7', io: 'input' })) as Json;

const top = routerConfigSchema.shape;

/** definitions name -> the router config schema it mirrors. */
export const ROUTER_DEFINITIONS: Readonly<Record<string, z.ZodType>> = {
  objectName: gatewayRefSchema.shape.name,
  mode: top.mode,
  gatewayRef: gatewayRefSchema,
  controllerName: controllerSchema.shape.name,
  gatewayListeners: top.gatewayListeners,
  gatewayStatusAddresses: gatewayStatusObject.shape.addresses,
  log: top.log,
  epp: eppSchema,
  parentProbe: parentProbeSchema,
  addressOverrides: clusterSchema.shape.addressOverrides,
  failOpen: clusterSchema.shape.failOpen,
  eppAnswers: clusterSchema.shape.eppAnswers,
  extProc: top.extProc,
  kubernetesTuning: top.kubernetes,
  outlier: top.outlier,
  picker: top.picker,
  routes: top.routes,
  tracing: top.tracing,
  qps: kubernetesSourceSchema.shape.qps,
  burst: kubernetesSourceSchema.shape.burst,
  requestTimeoutMs: kubernetesSourceSchema.shape.requestTimeoutMs,
  watchIdleTimeoutMs: kubernetesSourceSchema.shape.watchIdleTimeoutMs,
  maxResponseBytes: kubernetesSourceSchema.shape.maxResponseBytes,
  labelSelector: clusterProfilesSchema.shape.labelSelector,
  clusterProfileApiVersion: clusterProfilesSchema.shape.apiVersion,
  fleetPlugins: execPluginsSchema,
  fleetMembers: fleetMemberSchema,
  agentNamespacePrefix: exportAgentSchema.shape.namespacePrefix,
  agentHeartbeatMs: exportAgentSchema.shape.heartbeatMs,
  agentStaleAfterMs: exportAgentSchema.shape.staleAfterMs,
  agentResyncMs: exportAgentSchema.shape.resyncMs,
  agentWithdrawalGraceMs: exportAgentSchema.shape.withdrawalGraceMs,
};

export function routerDefinitions(): Record<string, Json> {
  return Object.fromEntries(Object.entries(ROUTER_DEFINITIONS).map(([name, schema]) => [name, generate(schema)]));
}
