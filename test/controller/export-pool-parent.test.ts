/**
 * Our InferencePool status.parents[] entry when the member's CRD does not declare
 * controllerName (GIE before v1.1.0): the API-server stand-in prunes it as a real
 * server does. Our entry is still found by its parentRef, written once, left alone
 * while it is up to date, and the operator is told once.
 */
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ownsPoolParent } from '../../src/controller/export-pool-parent.js';
import { waitFor } from '../sources/kubernetes/kube-fixtures.js';
import { ClusterSetEnv, EXPORTER, pruneGieV10PoolStatus as pruneV10, type Parent } from './export-fixtures.js';

const MEMBERS = ['cluster-a', 'cluster-b'];
const X = 'inference.networking.x-k8s.io';
const IMPORT_REF = { group: X, kind: 'InferencePoolImport', namespace: 'default', name: 'llm' };
const GATEWAY_PARENT = {
  parentRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'default', name: 'gw' },
  conditions: [{ type: 'Accepted', status: 'True', reason: 'Accepted', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' }],
};
const exportedTrue = (at = '2026-01-01T00:00:00Z') => ({ type: 'Exported', status: 'True', reason: 'Exported', message: 'InferencePoolImport present in every member', observedGeneration: 1, lastTransitionTime: at });

let env: ClusterSetEnv;
beforeEach(async () => {
  env = await new ClusterSetEnv(MEMBERS).start();
});
afterEach(async () => {
  await env.close();
});

const importParents = (m: string): Parent[] => env.parents(m, 'llm').filter((p) => p.parentRef.kind === 'InferencePoolImport');
const poolWrites = (m: string): number => env.server(m).writes('inferencepools', 'status').length;
const setParents = (m: string, parents: object[]): void => {
  const s = env.server(m);
  s.updateStatus('inferencepools', { ...s.get('inferencepools', 'default', 'llm')!, status: { parents } });
};

function capture() {
  const lines: { level: number; msg: string; member?: string; pool?: string }[] = [];
  const logger = pino({ level: 'info' }, { write: (l: string) => lines.push(JSON.parse(l) as (typeof lines)[number]) });
  return { lines, logger };
}

describe('our pool status entry on a CRD without status.parents[].controllerName', () => {
  it('one entry, found again by its parentRef: no write while unchanged, the pruning warned once and shown in debug', async () => {
    for (const m of MEMBERS) env.server(m).pruneStatus('inferencepools', pruneV10);
    const { lines, logger } = capture();
    const h = await env.replica('replica-1', {}, { logger });
    env.exportPool('cluster-b', 'llm');
    setParents('cluster-b', [GATEWAY_PARENT]);
    await waitFor(() => importParents('cluster-b').some((p) => p.conditions.some((c) => c.type === 'Exported' && c.status === 'True')), 8000, 'Exported True');
    for (let i = 0; i < 5; i++) await h.reconcile();
    const settled = poolWrites('cluster-b');
    for (let i = 0; i < 5; i++) await h.reconcile();

    expect(importParents('cluster-b')).toHaveLength(1);
    expect(poolWrites('cluster-b')).toBe(settled);
    // Pending, then Exported True, plus a retry for each 409 against the gateway entry the test writes
    // while the controller runs (how many depends on timing); appending on every pass wrote 31.
    expect(settled).toBeLessThanOrEqual(6);
    expect(importParents('cluster-b')[0]).toMatchObject({ parentRef: IMPORT_REF, conditions: [{ type: 'Exported', status: 'True' }] });
    expect(importParents('cluster-b')[0]?.controllerName).toBeUndefined();
    expect(env.parents('cluster-b', 'llm')[0]).toEqual(GATEWAY_PARENT);

    const warned = lines.filter((l) => l.level === 40 && l.msg.includes('status.parents[].controllerName'));
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({ member: 'cluster-b', pool: 'default/llm' });
    expect(warned[0]?.msg).toContain('InferencePool default/llm in cluster-b');
    expect(warned[0]?.msg).toContain('v1.1.0');
    expect(h.debug().members.map((m) => [m.name, m.controllerNamePruned])).toEqual([
      ['cluster-a', []],
      ['cluster-b', ['default/llm']],
    ]);
  });

  it('entries appended by an earlier version are collapsed into one; a condition change rewrites it in place', async () => {
    for (const m of MEMBERS) env.server(m).pruneStatus('inferencepools', pruneV10);
    env.exportPool('cluster-b', 'llm');
    const stale = { parentRef: IMPORT_REF, conditions: [{ ...exportedTrue(), status: 'False', reason: 'Pending', message: 'waiting for: cluster-a (import not created yet)' }] };
    setParents('cluster-b', [stale, GATEWAY_PARENT, stale, stale]);
    const h = await env.replica();
    await waitFor(() => importParents('cluster-b').length === 1 && importParents('cluster-b')[0]?.conditions[0]?.status === 'True', 8000, 'one entry, Exported True');
    expect(env.parents('cluster-b', 'llm').map((p) => p.parentRef.kind)).toEqual(['InferencePoolImport', 'Gateway']);

    env.annotate('cluster-b', 'llm', 'Everywhere');
    await waitFor(() => importParents('cluster-b')[0]?.conditions[0]?.reason === 'NotSupported', 8000, 'NotSupported');
    expect(importParents('cluster-b')).toHaveLength(1);
    env.annotate('cluster-b', 'llm', undefined);
    await waitFor(() => importParents('cluster-b').length === 0, 8000, 'removed with the annotation');
    expect(env.parents('cluster-b', 'llm')).toEqual([GATEWAY_PARENT]);
    expect(h.debug().members.find((m) => m.name === 'cluster-b')?.controllerNamePruned).toEqual([]);
  });

  it('a CRD that keeps controllerName: another controller naming the same import is left alone, ours added beside it, nothing warned', async () => {
    const { lines, logger } = capture();
    env.exportPool('cluster-b', 'llm');
    const other = { parentRef: IMPORT_REF, controllerName: 'example.com/other-exporter', conditions: [exportedTrue()] };
    setParents('cluster-b', [other]);
    const h = await env.replica('replica-1', {}, { logger });
    await waitFor(() => env.exported('cluster-b', 'llm')?.status === 'True', 8000, 'ours Exported True');
    await h.reconcile();
    expect(env.parents('cluster-b', 'llm').map((p) => p.controllerName)).toEqual(['example.com/other-exporter', EXPORTER]);
    expect(env.parents('cluster-b', 'llm')[0]).toEqual(other);
    expect(lines.filter((l) => l.level >= 40)).toEqual([]);
  });
});

describe('ownsPoolParent', () => {
  const ours = ownsPoolParent(EXPORTER, 'default', 'llm');
  const exported = [exportedTrue()];
  it('ours: our controllerName with an import parent, or no controllerName with exactly our import as parent and only Exported conditions', () => {
    expect(ours({ parentRef: IMPORT_REF, controllerName: EXPORTER, conditions: exported })).toBe(true);
    expect(ours({ parentRef: IMPORT_REF, conditions: exported })).toBe(true);
    expect(ours({ parentRef: { ...IMPORT_REF, namespace: undefined }, conditions: exported })).toBe(true);
    expect(ours({ parentRef: IMPORT_REF, conditions: [] })).toBe(true);
  });
  it('not ours: another controller, another parent, another import, other conditions', () => {
    expect(ours({ parentRef: IMPORT_REF, controllerName: 'example.com/other-exporter', conditions: exported })).toBe(false);
    expect(ours({ parentRef: { ...IMPORT_REF, kind: 'Gateway', group: 'gateway.networking.k8s.io' }, conditions: exported })).toBe(false);
    expect(ours({ parentRef: { ...IMPORT_REF, group: 'example.com' }, conditions: exported })).toBe(false);
    expect(ours({ parentRef: { ...IMPORT_REF, name: 'other' }, conditions: exported })).toBe(false);
    expect(ours({ parentRef: { ...IMPORT_REF, namespace: 'team-x' }, conditions: exported })).toBe(false);
    expect(ours({ parentRef: IMPORT_REF, conditions: [...exported, { type: 'Accepted', status: 'True' }] })).toBe(false);
    expect(ours({ conditions: exported })).toBe(false);
  });
});
