/**
 * deploy/: the InferencePoolImport CRD and the RBAC manifests are structurally
 * valid Kubernetes objects, the CRD schema accepts what the status writer
 * writes (and rejects what the API would), and RBAC grants exactly what the
 * code calls.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { CONTROLLER_NAME_PATTERN } from '../../../src/config/schema.js';
import { planImportStatuses } from '../../../src/controller/import-status.js';
import { LOCAL_KINDS, REMOTE_KINDS, RESOURCE_SPECS } from '../../../src/sources/kubernetes/resources.js';

type Doc = Record<string, any>;
const load = (path: string): Doc[] => parseAllDocuments(readFileSync(new URL(`../../../${path}`, import.meta.url), 'utf8')).map((d) => d.toJS() as Doc);

function expectObject(d: Doc): void {
  expect(typeof d.apiVersion).toBe('string');
  expect(typeof d.kind).toBe('string');
  expect(d.metadata?.name).toMatch(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/);
}

/** The subset of OpenAPI v3 validation a CRD structural schema uses here. */
function validate(schema: Doc, v: unknown, path = ''): string[] {
  const errs: string[] = [];
  const t = schema.type;
  if (t === 'object') {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return [`${path}: not an object`];
    for (const r of schema.required ?? []) if (!(r in (v as object))) errs.push(`${path}.${r}: required`);
    for (const [k, sub] of Object.entries(schema.properties ?? {})) {
      const x = (v as Doc)[k];
      if (x !== undefined) errs.push(...validate(sub as Doc, x, `${path}.${k}`));
    }
  } else if (t === 'array') {
    if (!Array.isArray(v)) return [`${path}: not an array`];
    if (schema.maxItems !== undefined && v.length > schema.maxItems) errs.push(`${path}: more than ${schema.maxItems} items`);
    if (schema['x-kubernetes-list-type'] === 'map') {
      const keys = v.map((i) => JSON.stringify((schema['x-kubernetes-list-map-keys'] as string[]).map((k) => i?.[k])));
      if (new Set(keys).size !== keys.length) errs.push(`${path}: duplicate map keys`);
    }
    v.forEach((i, n) => errs.push(...validate(schema.items, i, `${path}[${n}]`)));
  } else if (t === 'string') {
    if (typeof v !== 'string') return [`${path}: not a string`];
    if (schema.minLength !== undefined && v.length < schema.minLength) errs.push(`${path}: too short`);
    if (schema.maxLength !== undefined && v.length > schema.maxLength) errs.push(`${path}: too long`);
    if (schema.pattern !== undefined && !new RegExp(schema.pattern).test(v)) errs.push(`${path}: does not match ${schema.pattern}`);
    if (schema.enum && !schema.enum.includes(v)) errs.push(`${path}: not one of ${schema.enum}`);
    if (schema.format === 'date-time' && Number.isNaN(Date.parse(v))) errs.push(`${path}: not a date-time`);
  } else if (t === 'integer') {
    if (!Number.isInteger(v)) return [`${path}: not an integer`];
    if (schema.minimum !== undefined && (v as number) < schema.minimum) errs.push(`${path}: below minimum`);
  }
  return errs;
}

/** Structural schema rule: every node has a type, no $ref. */
function structural(schema: Doc, path = 'schema'): string[] {
  const errs: string[] = [];
  if ('$ref' in schema) errs.push(`${path}: $ref is not allowed`);
  if (typeof schema.type !== 'string') errs.push(`${path}: no type`);
  for (const [k, sub] of Object.entries(schema.properties ?? {})) errs.push(...structural(sub as Doc, `${path}.${k}`));
  if (schema.items) errs.push(...structural(schema.items, `${path}[]`));
  return errs;
}

describe('deploy/crds/inferencepoolimports.yaml', () => {
  const [crd] = load('deploy/crds/inferencepoolimports.yaml') as [Doc];
  const spec = RESOURCE_SPECS.InferencePoolImport;
  const version = crd.spec.versions[0];
  const schema = version.schema.openAPIV3Schema;
  const controllers = schema.properties.status.properties.controllers;

  it('is a CRD for the group/version/plural the router watches', () => {
    expectObject(crd);
    expect(crd.apiVersion).toBe('apiextensions.k8s.io/v1');
    expect(crd.kind).toBe('CustomResourceDefinition');
    expect(crd.metadata.name).toBe(`${spec.plural}.${spec.group}`);
    expect(crd.spec).toMatchObject({ group: spec.group, scope: 'Namespaced', names: { kind: 'InferencePoolImport', plural: spec.plural, shortNames: ['infpimp'] } });
    expect(crd.spec.versions).toHaveLength(1);
    expect(version).toMatchObject({ name: spec.version, served: true, storage: true, subresources: { status: {} } });
    expect(structural(schema)).toEqual([]);
  });

  it('has the upstream shape: no spec, status subresource, no printer columns, 8 controllers keyed by name', () => {
    expect(Object.keys(schema.properties).sort()).toEqual(['apiVersion', 'kind', 'metadata', 'status']);
    expect(schema.properties.status.required).toEqual(['controllers']);
    expect(version.additionalPrinterColumns).toBeUndefined();
    expect(controllers).toMatchObject({ maxItems: 8, 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'] });
    expect(Object.keys(controllers.items.properties).sort()).toEqual(['conditions', 'exportingClusters', 'name', 'parents']);
    expect(controllers.items.required).toEqual(['name']);
  });

  it('has the upstream list semantics: exportingClusters and parents atomic (parents unlimited), conditions maps keyed on type (max 8)', () => {
    const { exportingClusters, parents, conditions } = controllers.items.properties;
    // No list type = atomic: the whole list is replaced on write, never merged per item.
    expect(exportingClusters['x-kubernetes-list-type'] ?? 'atomic').toBe('atomic');
    expect(exportingClusters.maxItems).toBeUndefined();
    expect(parents['x-kubernetes-list-type']).toBe('atomic');
    expect(parents.maxItems).toBeUndefined();
    for (const c of [conditions, parents.items.properties.conditions]) {
      expect(c).toMatchObject({ maxItems: 8, 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] });
      expect(c.items.required).toEqual(['lastTransitionTime', 'message', 'reason', 'status', 'type']);
    }
    expect(parents.items.properties.parentRef.properties.group).toMatchObject({ default: 'gateway.networking.k8s.io', minLength: 0, maxLength: 253 });
    expect(parents.items.properties.parentRef.properties.kind).toMatchObject({ default: 'Gateway', minLength: 1, maxLength: 63 });
    expect(validate(schema, { status: { controllers: [{ name: 'example.com/a', parents: Array.from({ length: 40 }, (_, i) => ({ parentRef: { name: `gw${i}` } })) }] } })).toEqual([]);
  });

  it('the name pattern agrees with the config ControllerName pattern', () => {
    const crdPattern = new RegExp(controllers.items.properties.name.pattern);
    for (const s of ['example.com/bar', 'mcip-router.dev/import-controller', 'a.b/c/d~e', 'example.com', 'foo.example.com', 'Example.com/x', '/x', 'x/']) {
      expect(crdPattern.test(s), s).toBe(CONTROLLER_NAME_PATTERN.test(s));
    }
  });

  it('accepts the status the controller writes next to an export controller entry', () => {
    const [plan] = planImportStatuses({
      controllerName: 'mcip-router.dev/import-controller',
      imports: [{ kind: 'InferencePoolImport', apiVersion: 'x', metadata: { name: 'llm', namespace: 'default', generation: 2, labels: {}, annotations: {} }, status: { controllers: [] } }],
      routes: [{ route: { namespace: 'default', name: 'r' }, hostnames: [], parents: ['default/gw'], attachments: [{ parentRefIndex: 0, gateway: 'default/gw', listeners: [] }], rules: [{ route: { namespace: 'default', name: 'r' }, index: 0, backends: [{ ref: { group: spec.group, kind: 'InferencePoolImport', namespace: 'default', name: 'llm' }, weight: 1, candidates: [], excluded: [{ subject: 's', reason: 'ServiceNotFound', message: 'm' }] }], totalWeight: 1, matches: [] }] }],
      now: '2025-01-01T00:00:00Z',
    });
    const status = { controllers: [{ name: 'example.com/export', exportingClusters: [{ name: 'cluster-b' }] }, plan?.desired] };
    expect(validate(schema, { apiVersion: 'x', kind: 'InferencePoolImport', metadata: {}, status })).toEqual([]);
  });

  it('rejects what the API server would: 9 controllers, duplicate names, bad names, incomplete conditions', () => {
    const entry = (name: string) => ({ name });
    const check = (status: object) => validate(schema, { status });
    expect(check({ controllers: Array.from({ length: 9 }, (_, i) => entry(`example.com/c${i}`)) })).not.toEqual([]);
    expect(check({ controllers: [entry('example.com/a'), entry('example.com/a')] })).not.toEqual([]);
    expect(check({ controllers: [entry('example.com')] })).not.toEqual([]);
    expect(check({ controllers: [{ name: 'example.com/a', conditions: [{ type: 'Accepted', status: 'True' }] }] })).not.toEqual([]);
    expect(check({})).not.toEqual([]);
  });
});

interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

function grants(rules: Rule[], group: string, resource: string, verb: string): boolean {
  return rules.some((r) => r.apiGroups.includes(group) && r.resources.includes(resource) && r.verbs.includes(verb));
}

function checkBindings(docs: Doc[]): void {
  const sas = docs.filter((d) => d.kind === 'ServiceAccount').map((d) => `${d.metadata.namespace}/${d.metadata.name}`);
  for (const b of docs.filter((d) => d.kind === 'ClusterRoleBinding' || d.kind === 'RoleBinding')) {
    const role = docs.find((d) => d.kind === b.roleRef.kind && d.metadata.name === b.roleRef.name);
    expect(role, `${b.kind} ${b.metadata.name} -> ${b.roleRef.kind} ${b.roleRef.name}`).toBeDefined();
    expect(b.roleRef.apiGroup).toBe('rbac.authorization.k8s.io');
    if (b.kind === 'RoleBinding') expect(role?.metadata.namespace).toBe(b.metadata.namespace);
    for (const s of b.subjects) expect(sas).toContain(`${s.namespace}/${s.name}`);
  }
}

describe('deploy/rbac', () => {
  it.each(['local', 'remote'])('%s: a ClusterRole of its own grants GET /metrics (EPP scrapes), bound to the router identity', (which) => {
    const docs = load(`deploy/rbac/${which}.yaml`);
    const role = docs.find((d) => d.kind === 'ClusterRole' && (d.rules as Rule[]).some((r) => r.nonResourceURLs !== undefined));
    expect(role?.rules).toEqual([{ nonResourceURLs: ['/metrics'], verbs: ['get'] }]);
    const binding = docs.find((d) => d.kind === 'ClusterRoleBinding' && d.roleRef.name === role?.metadata.name);
    const sa = docs.find((d) => d.kind === 'ServiceAccount');
    expect(binding?.subjects).toEqual([{ kind: 'ServiceAccount', name: sa?.metadata.name, namespace: sa?.metadata.namespace }]);
  });

  it('local: read the five kinds, write import and Gateway API status, leases in a Role', () => {
    const docs = load('deploy/rbac/local.yaml');
    docs.forEach(expectObject);
    checkBindings(docs);
    const cluster = docs.find((d) => d.kind === 'ClusterRole')?.rules as Rule[];
    for (const kind of LOCAL_KINDS) {
      const s = RESOURCE_SPECS[kind];
      for (const verb of ['get', 'list', 'watch']) expect(grants(cluster, s.group, s.plural, verb), `${verb} ${s.plural}`).toBe(true);
      expect(grants(cluster, s.group, s.plural, 'update') || grants(cluster, s.group, s.plural, 'patch'), `no writes to ${s.plural}`).toBe(false);
    }
    // ImportStatusWriter: GET + merge-PATCH on /status (update allowed for PUT).
    for (const verb of ['get', 'patch', 'update']) expect(grants(cluster, RESOURCE_SPECS.InferencePoolImport.group, 'inferencepoolimports/status', verb)).toBe(true);
    // GatewayStatusWriter: list/get GatewayClasses, GET + merge-PATCH on the Gateway API kinds' /status.
    for (const verb of ['get', 'list']) expect(grants(cluster, 'gateway.networking.k8s.io', 'gatewayclasses', verb)).toBe(true);
    for (const plural of ['gatewayclasses', 'gateways', 'httproutes']) {
      for (const verb of ['get', 'patch', 'update']) expect(grants(cluster, 'gateway.networking.k8s.io', `${plural}/status`, verb), `${verb} ${plural}/status`).toBe(true);
    }
    expect(cluster.some((r) => r.resources.includes('leases'))).toBe(false);
    const role = docs.find((d) => d.kind === 'Role');
    const leaseRules = role?.rules as Rule[];
    // LeaderElector: read, create, replace.
    for (const verb of ['get', 'create', 'update']) expect(grants(leaseRules, 'coordination.k8s.io', 'leases', verb), verb).toBe(true);
    expect(leaseRules.find((r) => r.verbs.includes('update'))?.resourceNames).toEqual(['mcip-router-import-controller']);
  });

  it('remote: read-only on InferencePool, Service, Gateway and nothing else', () => {
    const docs = load('deploy/rbac/remote.yaml');
    docs.forEach(expectObject);
    checkBindings(docs);
    const rules = docs.find((d) => d.kind === 'ClusterRole')?.rules as Rule[];
    for (const kind of REMOTE_KINDS) {
      const s = RESOURCE_SPECS[kind];
      for (const verb of ['get', 'list', 'watch']) expect(grants(rules, s.group, s.plural, verb)).toBe(true);
    }
    const resources = rules.flatMap((r) => r.resources).sort();
    expect(resources).toEqual(REMOTE_KINDS.map((k) => RESOURCE_SPECS[k].plural).sort());
    expect(new Set(rules.flatMap((r) => r.verbs))).toEqual(new Set(['get', 'list', 'watch']));
    expect(docs.some((d) => d.kind === 'Role')).toBe(false);
  });
});
