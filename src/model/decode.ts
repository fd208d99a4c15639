/**
 * decodeObject: one raw Kubernetes object (parsed YAML/JSON) -> a normalised,
 * validated KubeObject, a list of FieldErrors, or "ignored" for kinds the
 * router does not read. Pure: no I/O, never throws.
 *
 * A kind is recognised by apiVersion + kind. A known kind in a known group but
 * an unsupported version (e.g. InferencePool inference.networking.x-k8s.io/v1alpha2)
 * is an error naming the supported version. The same kind name in an unrelated
 * group (an Istio networking.istio.io Gateway, a Knative serving.knative.dev
 * Service) is not ours and is ignored.
 */
import { decodeGateway, decodeGatewayClass } from './decode-gateway.js';
import { decodeInferencePool, decodeInferencePoolImport } from './decode-pool.js';
import { decodeHTTPRoute } from './decode-route.js';
import { decodeService } from './decode-service.js';
import type { NameRule, Raw } from './decode-util.js';
import { DecodeContext, isRecord, name, obj, optInt, optNamespace, optString, stringMap } from './decode-util.js';
import type { DecodeResult, KubeObject, ObjectKind, ObjectMeta, ObjectRef } from './types.js';
import { GROUP_CORE, GROUP_GATEWAY, GROUP_INFERENCE, GROUP_INFERENCE_X, describeObject } from './types.js';

type KindDecoder = (c: DecodeContext, raw: Raw, apiVersion: string, metadata: ObjectMeta) => KubeObject;

interface KindSpec {
  /** Groups in which this kind name means our kind (any version). */
  readonly groups: readonly string[];
  /** Exact apiVersions we decode. */
  readonly versions: readonly string[];
  readonly nameRule: NameRule;
  readonly decode: KindDecoder;
}

const KINDS: Readonly<Record<ObjectKind, KindSpec>> = {
  InferencePool: {
    groups: [GROUP_INFERENCE, GROUP_INFERENCE_X],
    versions: [`${GROUP_INFERENCE}/v1`],
    nameRule: 'subdomain',
    decode: decodeInferencePool,
  },
  InferencePoolImport: {
    groups: [GROUP_INFERENCE_X, GROUP_INFERENCE],
    versions: [`${GROUP_INFERENCE_X}/v1alpha1`],
    nameRule: 'subdomain',
    decode: decodeInferencePoolImport,
  },
  HTTPRoute: {
    groups: [GROUP_GATEWAY],
    versions: [`${GROUP_GATEWAY}/v1`, `${GROUP_GATEWAY}/v1beta1`],
    nameRule: 'subdomain',
    decode: decodeHTTPRoute,
  },
  Gateway: {
    groups: [GROUP_GATEWAY],
    versions: [`${GROUP_GATEWAY}/v1`, `${GROUP_GATEWAY}/v1beta1`],
    nameRule: 'subdomain',
    decode: decodeGateway,
  },
  GatewayClass: {
    groups: [GROUP_GATEWAY],
    versions: [`${GROUP_GATEWAY}/v1`, `${GROUP_GATEWAY}/v1beta1`],
    nameRule: 'subdomain',
    decode: decodeGatewayClass,
  },
  Service: { groups: [GROUP_CORE], versions: ['v1'], nameRule: 'dns1035', decode: decodeService },
};

export const SUPPORTED_KINDS: readonly ObjectKind[] = Object.keys(KINDS) as ObjectKind[];

function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? GROUP_CORE : apiVersion.slice(0, slash);
}

function decodeMetadata(c: DecodeContext, v: unknown, nameRule: NameRule): ObjectMeta {
  const m = obj(c, v, 'metadata', true);
  if (!m) return { name: '', namespace: 'default', labels: {}, annotations: {} };
  const uid = optString(c, m.uid, 'metadata.uid');
  const generation = optInt(c, m.generation, 'metadata.generation', 0, Number.MAX_SAFE_INTEGER);
  const resourceVersion = optString(c, m.resourceVersion, 'metadata.resourceVersion');
  const creationTimestamp = optString(c, m.creationTimestamp, 'metadata.creationTimestamp');
  return {
    name: name(c, m.name, 'metadata.name', nameRule),
    namespace: optNamespace(c, m.namespace, 'metadata.namespace') ?? 'default',
    ...(uid !== undefined ? { uid } : {}),
    ...(generation !== undefined ? { generation } : {}),
    ...(resourceVersion !== undefined ? { resourceVersion } : {}),
    ...(creationTimestamp !== undefined ? { creationTimestamp } : {}),
    labels: stringMap(c, m.labels, 'metadata.labels'),
    annotations: stringMap(c, m.annotations, 'metadata.annotations'),
  };
}

/**
 * The object's identity when it has one: a string kind and a non-empty string
 * metadata.name (namespace default applied). An object with an identity can be
 * left out alone when it is invalid; a document without one cannot be named.
 */
export function objectIdentity(raw: unknown): ObjectRef | undefined {
  if (!isRecord(raw) || typeof raw.kind !== 'string' || raw.kind === '') return undefined;
  const m = isRecord(raw.metadata) ? raw.metadata : {};
  if (typeof m.name !== 'string' || m.name === '') return undefined;
  const ns = m.namespace === undefined || m.namespace === null || m.namespace === '' ? 'default' : m.namespace;
  if (typeof ns !== 'string') return undefined;
  return { kind: raw.kind, namespace: ns, name: m.name };
}

/** "Kind namespace/name" for messages, with the namespace default applied. */
function identify(kind: string, raw: Raw): string {
  const m = isRecord(raw.metadata) ? raw.metadata : {};
  const ns = m.namespace === undefined || m.namespace === null || m.namespace === '' ? 'default' : m.namespace;
  return describeObject(kind, typeof ns === 'string' ? ns : undefined, typeof m.name === 'string' ? m.name : undefined);
}

function invalid(object: string, path: string, message: string, origin: string | undefined, ref?: ObjectRef): DecodeResult {
  const c = new DecodeContext(object, origin, ref);
  c.error(path, message);
  return { type: 'invalid', errors: c.errors };
}

export function decodeObject(raw: unknown, origin?: string): DecodeResult {
  const anonymous = origin ?? '<document>';
  if (!isRecord(raw)) return invalid(anonymous, '', 'not a Kubernetes object (expected a mapping with apiVersion and kind)', origin);
  const kind = raw.kind;
  const apiVersion = raw.apiVersion;
  if (typeof kind !== 'string' || kind === '') return invalid(anonymous, 'kind', 'required', origin);
  if (typeof apiVersion !== 'string' || apiVersion === '') {
    return invalid(identify(kind, raw), 'apiVersion', 'required', origin, objectIdentity(raw));
  }
  const spec = Object.hasOwn(KINDS, kind) ? KINDS[kind as ObjectKind] : undefined;
  if (!spec || !spec.groups.includes(groupOf(apiVersion))) return { type: 'ignored', kind, apiVersion };

  const c = new DecodeContext(identify(kind, raw), origin, objectIdentity(raw));
  if (!spec.versions.includes(apiVersion)) {
    c.error('apiVersion', `${apiVersion} is not supported for ${kind}; use ${spec.versions.join(' or ')}`);
    return { type: 'invalid', errors: c.errors };
  }
  const metadata = decodeMetadata(c, raw.metadata, spec.nameRule);
  const object = spec.decode(c, raw, apiVersion, metadata);
  return c.errors.length > 0 ? { type: 'invalid', errors: c.errors } : { type: 'ok', object };
}
