/** Decoders for InferencePool (inference.networking.k8s.io/v1) and InferencePoolImport (x-k8s.io/v1alpha1). */
import type { DecodeContext, Raw } from './decode-util.js';
import { conditions, list, name, obj, oneOf, optString, parentStatuses, port, reqString } from './decode-util.js';
import type { EndpointPickerRef, FailureMode, ImportController, InferencePool, InferencePoolImport, ObjectMeta } from './types.js';
import { GROUP_CORE } from './types.js';

const FAILURE_MODES: readonly FailureMode[] = ['FailOpen', 'FailClose'];
const APP_PROTOCOLS = ['http', 'kubernetes.io/h2c'] as const;
const MAX_TARGET_PORTS = 8;
const MAX_MATCH_LABELS = 64;
const MAX_POOL_PARENTS = 32;
const MAX_IMPORT_CONTROLLERS = 8;
const MAX_IMPORT_CONDITIONS = 8;

/** ControllerName: DOMAIN "/" PATH (from the InferencePoolImport API). */
const CONTROLLER_NAME =
  /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$/;

/** Optional since InferencePool v1.6: absent (or null) decodes to undefined, not an error. */
function endpointPickerRef(c: DecodeContext, v: unknown, path: string): EndpointPickerRef | undefined {
  const r = obj(c, v, path);
  if (!r) return undefined;
  const group = optString(c, r.group, `${path}.group`) ?? GROUP_CORE;
  const kind = optString(c, r.kind, `${path}.kind`) || 'Service';
  const refName = name(c, r.name, `${path}.name`);
  const failureMode = oneOf(c, r.failureMode, `${path}.failureMode`, FAILURE_MODES, 'FailClose');
  const p = obj(c, r.port, `${path}.port`);
  let number: number | undefined;
  if (p) {
    number = port(c, p.number, `${path}.port.number`, true);
  } else if (kind === 'Service') {
    const hint = r.portNumber !== undefined ? ' (found "portNumber", which is not part of v1: use port.number)' : '';
    c.error(`${path}.port`, `required when kind is Service${hint}`);
  }
  return {
    group,
    kind,
    name: refName,
    ...(number !== undefined ? { port: { number } } : {}),
    failureMode,
  };
}

function targetPorts(c: DecodeContext, v: unknown, path: string): { number: number }[] {
  const items = list(c, v, path, { required: true });
  if (v !== undefined && v !== null && items.length === 0) c.error(path, 'must have at least 1 item');
  if (items.length > MAX_TARGET_PORTS) c.error(path, `must have at most ${MAX_TARGET_PORTS} items, got ${items.length}`);
  const seen = new Set<number>();
  const out: { number: number }[] = [];
  items.forEach((raw, i) => {
    const p = `${path}[${i}]`;
    const r = obj(c, raw, p, true);
    if (!r) return;
    const n = port(c, r.number, `${p}.number`, true);
    if (n === undefined || n === 0) return;
    if (seen.has(n)) c.error(`${p}.number`, `duplicate port ${n}: port numbers must be unique`);
    seen.add(n);
    out.push({ number: n });
  });
  return out;
}

function matchLabels(c: DecodeContext, v: unknown, path: string): Record<string, string> {
  const out: Record<string, string> = {};
  const ml = obj(c, v, path, true);
  if (!ml) return out;
  const keys = Object.keys(ml);
  if (keys.length === 0) c.error(path, 'must have at least 1 entry');
  if (keys.length > MAX_MATCH_LABELS) c.error(path, `must have at most ${MAX_MATCH_LABELS} entries`);
  for (const k of keys) {
    const val = optString(c, ml[k], `${path}.${k}`);
    if (val !== undefined) out[k] = val;
  }
  return out;
}

function poolSpec(c: DecodeContext, v: unknown): InferencePool['spec'] {
  const spec = obj(c, v, 'spec', true);
  if (!spec) return { selector: { matchLabels: {} }, targetPorts: [], appProtocol: 'http' };
  const selector = obj(c, spec.selector, 'spec.selector', true);
  const labels = selector ? matchLabels(c, selector.matchLabels, 'spec.selector.matchLabels') : {};
  const ports = targetPorts(c, spec.targetPorts, 'spec.targetPorts');
  const appProtocol = oneOf(c, spec.appProtocol, 'spec.appProtocol', APP_PROTOCOLS, 'http');
  const picker = endpointPickerRef(c, spec.endpointPickerRef, 'spec.endpointPickerRef');
  return {
    selector: { matchLabels: labels },
    targetPorts: ports,
    appProtocol,
    ...(picker !== undefined ? { endpointPickerRef: picker } : {}),
  };
}

export function decodeInferencePool(c: DecodeContext, raw: Raw, apiVersion: string, metadata: ObjectMeta): InferencePool {
  const spec = poolSpec(c, raw.spec);
  const status = obj(c, raw.status, 'status') ?? {};
  return {
    kind: 'InferencePool',
    apiVersion,
    metadata,
    spec,
    status: { parents: parentStatuses(c, status.parents, 'status.parents', MAX_POOL_PARENTS) },
  };
}

function importController(c: DecodeContext, raw: unknown, path: string): ImportController {
  const r = obj(c, raw, path, true) ?? {};
  // The proposal's example uses "controllerName"; the Go type uses "name". Accept both, prefer "name".
  const useLegacy = (r.name === undefined || r.name === null) && r.controllerName !== undefined;
  const namePath = useLegacy ? `${path}.controllerName` : `${path}.name`;
  const controller = reqString(c, useLegacy ? r.controllerName : r.name, namePath);
  if (controller !== '' && (controller.length > 253 || !CONTROLLER_NAME.test(controller))) {
    c.error(namePath, `"${controller}" must be a domain-prefixed path, e.g. example.com/import-controller`);
  }
  const clusters = list(c, r.exportingClusters, `${path}.exportingClusters`);
  const seen = new Set<string>();
  const exportingClusters = clusters.map((rc, i) => {
    const p = `${path}.exportingClusters[${i}]`;
    const e = obj(c, rc, p, true) ?? {};
    const cluster = reqString(c, e.name, `${p}.name`);
    if (cluster !== '' && seen.has(cluster)) c.error(`${p}.name`, `duplicate exporting cluster "${cluster}"`);
    seen.add(cluster);
    return { name: cluster };
  });
  return {
    name: controller,
    exportingClusters,
    parents: parentStatuses(c, r.parents, `${path}.parents`),
    conditions: conditions(c, r.conditions, `${path}.conditions`, MAX_IMPORT_CONDITIONS),
  };
}

/**
 * InferencePoolImport is status-only. A missing status (e.g. an import the
 * controller has not filled in yet) decodes to no controllers, which the
 * snapshot builder reports as having no exporting clusters.
 */
export function decodeInferencePoolImport(
  c: DecodeContext,
  raw: Raw,
  apiVersion: string,
  metadata: ObjectMeta,
): InferencePoolImport {
  const status = obj(c, raw.status, 'status') ?? {};
  const items = list(c, status.controllers, 'status.controllers', { max: MAX_IMPORT_CONTROLLERS });
  const controllers = items.map((rc, i) => importController(c, rc, `status.controllers[${i}]`));
  const seen = new Set<string>();
  controllers.forEach((ctl, i) => {
    if (ctl.name === '') return;
    if (seen.has(ctl.name)) c.error(`status.controllers[${i}].name`, `duplicate controller "${ctl.name}"`);
    seen.add(ctl.name);
  });
  return { kind: 'InferencePoolImport', apiVersion, metadata, status: { controllers } };
}
