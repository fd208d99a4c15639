/** The push/pull record: what a member publishes, and every check a reader makes before trusting one. */
import { describe, expect, it } from 'vitest';
import { buildRecordSpec, decodeRecord, recordImports, recordPools, sameRecordContent } from '../../src/controller/export-agent-record.js';
import { planExports, type PoolView } from '../../src/controller/export-plan.js';
import { EXPORT_ANNOTATION } from '../../src/model/types.js';

const P = 'mcip-member-';
const raw = (namespace: string, name: string, spec: Record<string, unknown>) => ({ metadata: { namespace, name, resourceVersion: '7' }, spec: { formatVersion: 1, cluster: name, renewTime: '2026-11-28T08:00:00Z', ...spec } });

describe('decodeRecord', () => {
  it('takes a well-formed record, the member from its namespace', () => {
    const r = decodeRecord(raw('mcip-member-cluster-a', 'cluster-a', { exports: [{ namespace: 'team', name: 'llm' }], imports: [{ namespace: 'team', name: 'x', exportingClusters: ['cluster-b'] }] }), P);
    expect(r).toMatchObject({ ok: true, record: { cluster: 'cluster-a', resourceVersion: '7', exports: [{ namespace: 'team', name: 'llm' }], imports: [{ exportingClusters: ['cluster-b'] }] } });
  });

  it.each([
    ['another member\'s name in this namespace', raw('mcip-member-cluster-a', 'cluster-a', { cluster: 'cluster-b' }), 'spec.cluster', /claims cluster "cluster-b", but the record lives in mcip-member-cluster-a/],
    ['a namespace that is no member\'s', raw('default', 'cluster-a', {}), 'metadata.namespace', /not a member's record namespace/],
    ['a name other than its member', raw('mcip-member-cluster-a', 'other', { cluster: 'cluster-a' }), 'metadata.name', /cluster-a/],
    ['a newer format', raw('mcip-member-cluster-a', 'cluster-a', { formatVersion: 2 }), 'spec.formatVersion', /2 is not a record format this agent reads \(it reads 1\)/],
    ['no format', raw('mcip-member-cluster-a', 'cluster-a', { formatVersion: undefined }), 'spec.formatVersion', /undefined/],
    ['a bad pool name', raw('mcip-member-cluster-a', 'cluster-a', { exports: [{ namespace: 'team', name: 'Bad_Name' }] }), 'spec.exports[0].name', /RFC 1123/],
    ['a duplicate', raw('mcip-member-cluster-a', 'cluster-a', { exports: [{ namespace: 't', name: 'a' }, { namespace: 't', name: 'a' }] }), 'spec.exports[1]', /t\/a listed twice/],
    ['a bad exporting cluster', raw('mcip-member-cluster-a', 'cluster-a', { imports: [{ namespace: 't', name: 'a', exportingClusters: ['../x'] }] }), 'spec.imports[0].exportingClusters', /cluster names/],
    ['exports not a list', raw('mcip-member-cluster-a', 'cluster-a', { exports: 'all' }), 'spec.exports', /must be a list/],
    ['no renewTime', raw('mcip-member-cluster-a', 'cluster-a', { renewTime: 'yesterday' }), 'spec.renewTime', /RFC 3339/],
  ])('refuses %s, naming the record and the field', (_what, input, path, message) => {
    const r = decodeRecord(input, P);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.object).toBe(`MemberExportRecord ${input.metadata.namespace}/${input.metadata.name}`);
    expect(r.error.path).toBe(path);
    expect(r.error.message).toMatch(message);
  });
});

describe('buildRecordSpec', () => {
  it('publishes the pools the plan counts this member as exporting, and its imports carrying our entry; the planner reads them back', () => {
    const me = 'mcip-router.dev/export-agent';
    const pool = (name: string, value?: string): PoolView => ({ metadata: { namespace: 'team', name, labels: {}, annotations: value ? { [EXPORT_ANNOTATION]: value } : {} }, status: { parents: [] } });
    const held = { kind: 'InferencePoolImport' as const, apiVersion: 'v', metadata: { namespace: 'team', name: 'far', labels: {}, annotations: {} }, status: { controllers: [{ name: me, exportingClusters: [{ name: 'cluster-b' }], parents: [], conditions: [] }, { name: 'other/x', exportingClusters: [{ name: 'z' }], parents: [], conditions: [] }] } };
    const view = { name: 'cluster-a', reachable: true, synced: true, starting: false, pools: [pool('llm', 'ClusterSet'), pool('region', 'Region'), pool('plain')], imports: [held], missingNamespaces: new Set<string>(), invalidPools: new Set<string>(), created: new Set<string>() };
    const plan = planExports({ controllerName: me, members: [view], withdrawnSince: new Map(), now: 0, graceMs: 0 });
    const spec = buildRecordSpec('cluster-a', me, plan, [held], '2026-11-28T08:00:00Z');
    expect(spec).toEqual({ formatVersion: 1, cluster: 'cluster-a', exports: [{ namespace: 'team', name: 'llm' }], imports: [{ namespace: 'team', name: 'far', exportingClusters: ['cluster-b'] }], renewTime: '2026-11-28T08:00:00Z' });
    expect(sameRecordContent(spec, { ...spec, renewTime: 'later' })).toBe(true);
    expect(sameRecordContent(spec, { ...spec, exports: [] })).toBe(false);
    expect(recordPools(spec).map((p) => p.metadata.annotations[EXPORT_ANNOTATION])).toEqual(['ClusterSet']);
    expect(recordImports(spec, me)[0]?.status.controllers[0]).toMatchObject({ name: me, exportingClusters: [{ name: 'cluster-b' }] });
  });
});
