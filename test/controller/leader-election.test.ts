import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LeaderElector, createLeaseClient, type LeaseClient } from '../../src/controller/leader-election.js';
import { loadKubeConfig } from '../../src/sources/kubernetes/kubeconfig.js';
import { KubeEnv, silent, sleep, waitFor } from '../sources/kubernetes/kube-fixtures.js';
import { withinProcessMs } from '../helpers/work-time.js';

let env: KubeEnv;
let client: LeaseClient;
const electors: LeaderElector[] = [];

beforeEach(async () => {
  env = await new KubeEnv().start();
  client = createLeaseClient(loadKubeConfig({ kubeconfig: env.kubeconfig, namespaces: [] }));
});
afterEach(async () => {
  await Promise.all(electors.splice(0).map((e) => e.stop()));
  await env.close();
});

/** A client that can be cut off, like a replica partitioned from the API server. */
function partitionable(inner: LeaseClient): { client: LeaseClient; cut: () => void } {
  let cut = false;
  const guard = <T>(f: () => Promise<T>): Promise<T> => (cut ? Promise.reject(new Error('partitioned')) : f());
  return {
    client: {
      read: (ns, n) => guard(() => inner.read(ns, n)),
      create: (ns, l) => guard(() => inner.create(ns, l)),
      replace: (ns, n, l) => guard(() => inner.replace(ns, n, l)),
    },
    cut: () => (cut = true),
  };
}

function elector(identity: string, c: LeaseClient = client, events: string[] = []): LeaderElector {
  const e = new LeaderElector({
    client: c,
    namespace: 'mcip',
    name: 'router-lease',
    identity,
    leaseDurationMs: 1000,
    renewDeadlineMs: 600,
    retryPeriodMs: 100,
    onStartedLeading: () => events.push(`${identity}:start`),
    onStoppedLeading: () => events.push(`${identity}:stop`),
    logger: silent,
  });
  electors.push(e);
  return e;
}

/** Samples leadership while `during` runs; fails if two replicas ever lead at once. */
async function neverTwoLeaders(all: LeaderElector[], during: () => Promise<void>): Promise<void> {
  let both = false;
  const t = setInterval(() => {
    if (all.filter((e) => e.isLeader()).length > 1) both = true;
  }, 5);
  try {
    await during();
  } finally {
    clearInterval(t);
  }
  expect(both).toBe(false);
}

describe('LeaderElector', () => {
  it('two replicas: exactly one leads, the Lease names it', async () => {
    const a = elector('replica-a');
    const b = elector('replica-b');
    await neverTwoLeaders([a, b], async () => {
      a.start();
      b.start();
      await waitFor(() => a.isLeader() || b.isLeader(), 2000, 'a leader');
      await sleep(400);
    });
    const leader = a.isLeader() ? 'replica-a' : 'replica-b';
    const lease = env.server.get('leases', 'mcip', 'router-lease');
    expect((lease?.spec as { holderIdentity: string }).holderIdentity).toBe(leader);
    expect((lease?.spec as { leaseDurationSeconds: number }).leaseDurationSeconds).toBe(1);
  });

  it('the leader renews: leadership is stable and renewTime advances', async () => {
    const a = elector('replica-a');
    a.start();
    await waitFor(() => a.isLeader(), 2000);
    const r1 = (env.server.get('leases', 'mcip', 'router-lease')?.spec as { renewTime: string }).renewTime;
    await sleep(350);
    const r2 = (env.server.get('leases', 'mcip', 'router-lease')?.spec as { renewTime: string }).renewTime;
    expect(a.isLeader()).toBe(true);
    expect(r2).not.toBe(r1);
    expect(r2).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  });

  it('stop() releases the Lease and the other replica takes over quickly', async () => {
    const events: string[] = [];
    const a = elector('replica-a', client, events);
    a.start();
    await waitFor(() => a.isLeader(), 2000);
    const b = elector('replica-b', client, events);
    b.start();
    await sleep(300);
    expect(b.isLeader()).toBe(false);
    // Released: no need to wait for the lease to expire (1000 ms).
    await withinProcessMs(800, 'failover', () =>
      neverTwoLeaders([a, b], async () => {
        await a.stop();
        await waitFor(() => b.isLeader(), 5000, 'failover');
      }),
    );
    expect(events).toEqual(['replica-a:start', 'replica-a:stop', 'replica-b:start']);
    const spec = env.server.get('leases', 'mcip', 'router-lease')?.spec as { holderIdentity: string; leaseTransitions: number };
    expect(spec.holderIdentity).toBe('replica-b');
    expect(spec.leaseTransitions).toBe(1);
  });

  it('a leader cut off from the API server steps down; the other takes over after the lease expires', async () => {
    const p = partitionable(client);
    const a = elector('replica-a', p.client);
    a.start();
    await waitFor(() => a.isLeader(), 2000);
    const b = elector('replica-b');
    b.start();
    await sleep(200);
    await neverTwoLeaders([a, b], async () => {
      p.cut();
      await waitFor(() => !a.isLeader(), 1500, 'step down');
      await waitFor(() => b.isLeader(), 2500, 'takeover');
    });
  });

  it('a 403 on leases never makes anyone leader', async () => {
    env.server.forbid('leases');
    const a = elector('replica-a');
    a.start();
    await sleep(400);
    expect(a.isLeader()).toBe(false);
    env.server.allow('leases');
    await waitFor(() => a.isLeader(), 2000, 'leader once allowed');
  });
});
