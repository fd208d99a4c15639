/**
 * Validates an Envoy v3 bootstrap (YAML or an already parsed tree) against the
 * upstream Envoy API protos, the way Envoy's own loader would: proto3 JSON
 * mapping (snake_case or lowerCamelCase names, enum names or numbers, scalars
 * of the right kind, well-known types in their JSON forms), `typed_config`
 * bodies checked against their `@type`, the PGV rules that bite static
 * configs, then a few rules Envoy enforces in code (see envoy-semantics.ts).
 *
 * Returns every problem with its YAML path; never throws on a bad config.
 */
import fs from 'node:fs';
import protobuf from 'protobufjs';
import YAML from 'yaml';
import { jsonName, sharedRegistry, type ProtoRegistry } from './proto-registry.js';
import { checkPgv, checkScalar, checkScalarWellKnown, describe, pgvRequired, pgvRules, SCALAR_TYPES } from './value-checks.js';
import { CLUSTER_REFS, checkMessageSemantics, checkReferences, type ClusterRef } from './envoy-semantics.js';

export interface ConfigError {
  /** YAML path, e.g. `static_resources.clusters[1].connect_timeout`. */
  readonly path: string;
  readonly message: string;
  /** A likely intended spelling, when there is one. */
  readonly hint?: string;
}

export const BOOTSTRAP_TYPE = 'envoy.config.bootstrap.v3.Bootstrap';

export function formatError(e: ConfigError): string {
  return `${e.path}: ${e.message}`;
}

/** Well-known types whose JSON form inside an Any is `{"@type": ..., "value": <json>}`. */
const ANY_VALUE_FORM = /^google\.protobuf\.(Duration|Timestamp|FieldMask|Struct|Value|ListValue|Empty|\w+Value)$/;

export interface WalkContext {
  readonly registry: ProtoRegistry;
  readonly errors: ConfigError[];
  readonly refs: ClusterRef[];
  /** Inside a STRICT_DNS / LOGICAL_DNS cluster, where socket addresses may be host names. */
  readonly dnsCluster: boolean;
  /** Validates a value as the named message type (used for TypedStruct bodies). */
  readonly validateAs: (typeName: string, value: unknown, path: string) => void;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

export function joinPath(base: string, key: string): string {
  return base === '' ? key : `${base}.${key}`;
}

/** Levenshtein distance, for "did you mean" hints. */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return row[b.length]!;
}

function closest(word: string, candidates: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestD = Math.max(2, Math.floor(word.length / 4)) + 1;
  for (const c of candidates) {
    const d = distance(word.toLowerCase(), c.toLowerCase());
    if (d < bestD) [best, bestD] = [c, d];
  }
  return best;
}

const fieldIndexCache = new WeakMap<protobuf.Type, Map<string, protobuf.Field>>();

/** Both accepted spellings of every field: proto name and proto3 JSON name. */
function fieldIndex(type: protobuf.Type): Map<string, protobuf.Field> {
  let idx = fieldIndexCache.get(type);
  if (!idx) {
    idx = new Map();
    for (const f of type.fieldsArray) {
      idx.set(f.name, f);
      idx.set(jsonName(f.name), f);
    }
    fieldIndexCache.set(type, idx);
  }
  return idx;
}

/** proto3 `optional` makes a one-member synthetic oneof; it never conflicts. */
const isSyntheticOneof = (o: protobuf.OneOf): boolean =>
  o.fieldsArray.length === 1 && o.fieldsArray[0]?.options?.['proto3_optional'] === true;

function err(ctx: WalkContext, path: string, message: string, hint?: string): void {
  ctx.errors.push(hint ? { path, message, hint } : { path, message });
}

export function walkMessage(type: protobuf.Type, v: unknown, path: string, ctx: WalkContext): void {
  const name = type.fullName.replace(/^\./, '');
  if (v === null) return; // proto3 JSON: null means "not set"
  const scalarForm = checkScalarWellKnown(name, v);
  if (scalarForm !== null) {
    if (scalarForm) err(ctx, path, scalarForm);
    return;
  }
  if (name === 'google.protobuf.Value') return;
  if (name === 'google.protobuf.ListValue') {
    if (!Array.isArray(v)) err(ctx, path, `expected a list, got ${describe(v)}`);
    return;
  }
  if (!isObject(v)) {
    err(ctx, path, `expected an object (${name}), got ${describe(v)}`);
    return;
  }
  if (name === 'google.protobuf.Struct') return;
  if (name === 'google.protobuf.Any') return walkAny(v, path, ctx);

  const index = fieldIndex(type);
  const present = new Map<protobuf.Field, string>();
  const childCtx: WalkContext =
    name === 'envoy.config.cluster.v3.Cluster'
      ? { ...ctx, dnsCluster: ['STRICT_DNS', 'LOGICAL_DNS', 1, 2].includes(v['type'] as string) }
      : ctx;
  for (const [key, value] of Object.entries(v)) {
    const p = joinPath(path, key);
    const field = index.get(key);
    if (!field) {
      err(ctx, p, `unknown field "${key}" in ${name}`, closest(key, index.keys()));
      continue;
    }
    const earlier = present.get(field);
    if (earlier !== undefined) {
      err(ctx, p, `field set twice (as "${earlier}" and "${key}")`);
      continue;
    }
    present.set(field, key);
    if (field.options?.['deprecated'] === true) err(ctx, p, `deprecated field "${field.name}" in ${name}`);
    walkField(name, field, value, p, childCtx);
  }
  checkOneofsAndRequired(type, v, present, path, ctx);
  checkMessageSemantics(name, v, path, childCtx);
}

function checkOneofsAndRequired(
  type: protobuf.Type,
  v: Record<string, unknown>,
  present: Map<protobuf.Field, string>,
  path: string,
  ctx: WalkContext,
): void {
  const isSet = (f: protobuf.Field): boolean => present.has(f) && v[present.get(f)!] !== null;
  for (const oneof of type.oneofsArray) {
    if (isSyntheticOneof(oneof)) continue;
    const set = oneof.fieldsArray.filter(isSet).map((f) => f.name);
    const all = oneof.fieldsArray.map((f) => f.name).join(', ');
    if (set.length > 1) err(ctx, path, `oneof "${oneof.name}" allows one of [${all}], got ${set.join(' and ')}`);
    if (set.length === 0 && oneof.options?.['(validate.required)'] === true) {
      err(ctx, path, `oneof "${oneof.name}" needs one of [${all}]`);
    }
  }
  for (const f of type.fieldsArray) {
    // PGV checks a oneof member (or proto3 optional) only when it is the one set.
    if (isSet(f) || f.partOf) continue;
    const rules = pgvRules(f);
    const p = joinPath(path, f.name);
    if (pgvRequired(rules)) {
      err(ctx, p, 'required field is missing');
    } else if (f.repeated || f.map) {
      const r = (rules['repeated'] ?? rules['map']) as Record<string, unknown> | undefined;
      const min = Number(r?.['min_items'] ?? r?.['min_pairs'] ?? 0);
      if (min > 0) err(ctx, p, `needs at least ${min} item(s)`);
    } else if (SCALAR_TYPES.has(f.type)) {
      // PGV also checks plain scalars left at their default ("" / 0 / false).
      const dflt = f.type === 'string' || f.type === 'bytes' ? '' : f.type === 'bool' ? false : 0;
      const msg = checkPgv(rules, f.type, dflt);
      if (msg) err(ctx, p, `${msg} (field is missing)`);
    }
  }
}

function walkField(parent: string, field: protobuf.Field, v: unknown, path: string, ctx: WalkContext): void {
  try {
    field.resolve();
  } catch (e) {
    err(ctx, path, `cannot resolve type ${field.type} of ${parent}.${field.name}: ${(e as Error).message}`);
    return;
  }
  const refKind = CLUSTER_REFS[`${parent}.${field.name}`];
  if (field.map) {
    if (v === null) return;
    if (!isObject(v)) return err(ctx, path, `expected a map (object), got ${describe(v)}`);
    const keyType = (field as unknown as protobuf.MapField).keyType;
    for (const [k, value] of Object.entries(v)) {
      const p = `${path}[${JSON.stringify(k)}]`;
      if (keyType === 'bool' ? k !== 'true' && k !== 'false' : keyType !== 'string' && checkScalar(keyType, k)) {
        err(ctx, p, `map key ${JSON.stringify(k)} is not a valid ${keyType}`);
      }
      if (refKind === 'keys') ctx.refs.push({ cluster: k, path: p, via: `${parent}.${field.name}` });
      walkValue(field, value, p, ctx, false);
    }
    return;
  }
  if (field.repeated) {
    if (v === null) return;
    if (!Array.isArray(v)) return err(ctx, path, `expected a list, got ${describe(v)}`);
    v.forEach((item, i) => {
      const p = `${path}[${i}]`;
      if (refKind === 'value' && typeof item === 'string') ctx.refs.push({ cluster: item, path: p, via: `${parent}.${field.name}` });
      walkValue(field, item, p, ctx, false);
    });
    const r = pgvRules(field)['repeated'] as Record<string, unknown> | undefined;
    const min = Number(r?.['min_items'] ?? 0);
    const max = Number(r?.['max_items'] ?? Infinity);
    if (v.length < min) err(ctx, path, `needs at least ${min} item(s)`);
    if (v.length > max) err(ctx, path, `allows at most ${max} item(s)`);
    return;
  }
  if (Array.isArray(v)) return err(ctx, path, `expected a single value, got a list`);
  if (refKind === 'value' && typeof v === 'string') ctx.refs.push({ cluster: v, path, via: `${parent}.${field.name}` });
  walkValue(field, v, path, ctx, true);
}

function walkValue(field: protobuf.Field, v: unknown, path: string, ctx: WalkContext, singular: boolean): void {
  const t = field.resolvedType;
  if (t instanceof protobuf.Enum) return checkEnum(t, v, path, ctx);
  if (t instanceof protobuf.Type) {
    walkMessage(t, v, path, ctx);
    if (singular && v !== null) {
      const msg = checkPgv(pgvRules(field), t.fullName.replace(/^\./, ''), v);
      if (msg) err(ctx, path, msg);
    }
    return;
  }
  if (v === null) return;
  const bad = checkScalar(field.type, v);
  if (bad) return err(ctx, path, bad);
  if (singular) {
    const msg = checkPgv(pgvRules(field), field.type, v);
    if (msg) err(ctx, path, msg);
  }
}

function checkEnum(e: protobuf.Enum, v: unknown, path: string, ctx: WalkContext): void {
  if (v === null) return;
  const name = e.fullName.replace(/^\./, '');
  if (typeof v === 'string') {
    if (e.values[v] === undefined) return err(ctx, path, `unknown enum value "${v}"`, closest(v, Object.keys(e.values)));
    if (e.valuesOptions?.[v]?.['deprecated'] === true) err(ctx, path, `deprecated enum value "${v}" of ${name}`);
    return;
  }
  if (typeof v === 'number' && Number.isInteger(v)) {
    if (e.valuesById[v] === undefined) err(ctx, path, `unknown enum number ${v} for ${name}`);
    return;
  }
  err(ctx, path, `expected a ${name} name or number, got ${describe(v)}`);
}

function walkAny(v: Record<string, unknown>, path: string, ctx: WalkContext): void {
  const url = v['@type'];
  const typePath = joinPath(path, '@type');
  if (typeof url !== 'string') return err(ctx, typePath, 'typed config needs "@type": type.googleapis.com/<full.type.Name>');
  const slash = url.lastIndexOf('/');
  if (slash < 0) return err(ctx, typePath, `type URL "${url}" has no "/" (want type.googleapis.com/<full.type.Name>)`);
  const type = ctx.registry.message(url.slice(slash + 1));
  if (!type) return err(ctx, typePath, `unresolvable @type "${url}"`);
  const body = Object.fromEntries(Object.entries(v).filter(([k]) => k !== '@type'));
  if (ANY_VALUE_FORM.test(type.fullName.replace(/^\./, ''))) {
    for (const k of Object.keys(body)) if (k !== 'value') err(ctx, joinPath(path, k), `unknown field "${k}" (a well-known type in an Any takes only "value")`);
    walkMessage(type, body['value'] ?? null, joinPath(path, 'value'), ctx);
    return;
  }
  walkMessage(type, body, path, ctx);
}

export interface ValidateOptions {
  readonly registry?: ProtoRegistry;
  /** Message type of the document root; the bootstrap by default. */
  readonly rootType?: string;
}

/** Validates a parsed config tree. */
export function validateEnvoyConfig(doc: unknown, opts: ValidateOptions = {}): ConfigError[] {
  const registry = opts.registry ?? sharedRegistry();
  const rootType = opts.rootType ?? BOOTSTRAP_TYPE;
  const errors: ConfigError[] = [];
  const type = registry.message(rootType);
  if (!type) return [{ path: '', message: `cannot load ${rootType} from the Envoy API protos` }];
  const ctx: WalkContext = {
    registry,
    errors,
    refs: [],
    dnsCluster: false,
    validateAs(typeName, value, path) {
      const t = registry.message(typeName);
      if (!t) return err(ctx, path, `unresolvable type "${typeName}"`);
      walkMessage(t, value, path, ctx);
    },
  };
  if (!isObject(doc)) return [{ path: '', message: `expected a YAML mapping at the top, got ${describe(doc)}` }];
  walkMessage(type, doc, '', ctx);
  if (rootType === BOOTSTRAP_TYPE) errors.push(...checkReferences(doc, ctx.refs));
  return errors;
}

/** Parses YAML (syntax errors and duplicate keys are errors) and validates it. */
export function validateEnvoyYaml(text: string, opts: ValidateOptions = {}): ConfigError[] {
  const doc = YAML.parseDocument(text, { uniqueKeys: true });
  if (doc.errors.length > 0) return doc.errors.map((e) => ({ path: '', message: `YAML: ${e.message}` }));
  return validateEnvoyConfig(doc.toJS(), opts);
}

export function validateEnvoyFile(file: string, opts: ValidateOptions = {}): ConfigError[] {
  return validateEnvoyYaml(fs.readFileSync(file, 'utf8'), opts);
}
