/**
 * The load generator's connection rotation (bench/lib/connections.ts), as
 * Envoy's max_requests_per_connection on the mcip_router cluster: a
 * connection takes `every` streams, then drains and closes once its streams
 * have ended. No server needed: grpc-js connects lazily, and a closed channel
 * reports SHUTDOWN.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { connectivityState, type Client } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { parseArgs } from '../../bench/lib/args.js';
import { ROOT } from '../../bench/lib/paths.js';
import { RotatingConnections } from '../../bench/lib/connections.js';
import { routerMaxRequestsPerConnection } from '../envoy/config-fixtures.js';

const ADDRESS = '127.0.0.1:9'; // never dialled: no stream is started
const closed = (c: Client): boolean => c.getChannel().getConnectivityState(false) === connectivityState.SHUTDOWN;

let pool: RotatingConnections | undefined;
afterEach(() => {
  pool?.close();
  pool = undefined;
});

describe('RotatingConnections', () => {
  it('replaces a connection after maxRequestsPerConnection streams and closes it once they have ended', () => {
    pool = new RotatingConnections(ADDRESS, 1, 3);
    const first = [pool.lease(), pool.lease(), pool.lease()];
    expect(new Set(first.map((l) => l.client)).size).toBe(1);
    const fourth = pool.lease();
    expect(fourth.client).not.toBe(first[0]!.client);
    expect(pool.connectionsOpened).toBe(2);
    // The drained connection stays open while its streams run.
    first[0]!.release();
    first[1]!.release();
    expect(closed(first[0]!.client)).toBe(false);
    first[2]!.release();
    first[2]!.release(); // idempotent
    expect(closed(first[0]!.client)).toBe(true);
    expect(closed(fourth.client)).toBe(false);
    expect(pool.connectionsOpen).toBe(1);
  });

  it('spreads streams over its slots round robin, each slot rotating on its own', () => {
    pool = new RotatingConnections(ADDRESS, 2, 2);
    const leases = Array.from({ length: 6 }, () => pool!.lease());
    const clients = leases.map((l) => l.client);
    expect(clients[0]).not.toBe(clients[1]);
    expect(clients[2]).toBe(clients[0]);
    expect(clients[3]).toBe(clients[1]);
    expect(new Set(clients.slice(4)).size).toBe(2);
    expect(clients.slice(4)).not.toContain(clients[0]);
    expect(pool.connectionsOpened).toBe(4);
  });

  it('0 never rotates', () => {
    pool = new RotatingConnections(ADDRESS, 1, 0);
    const leases = Array.from({ length: 2000 }, () => pool!.lease());
    for (const l of leases) l.release();
    expect(new Set(leases.map((l) => l.client)).size).toBe(1);
    expect(pool.connectionsOpened).toBe(1);
    expect(closed(leases[0]!.client)).toBe(false);
  });
});

describe('bench flags', () => {
  it("defaults --max-requests-per-connection to envoy/envoy.yaml's mcip_router cluster, and keeps --close reset", () => {
    const o = parseArgs([]);
    expect(o.maxRequestsPerConnection).toBe(routerMaxRequestsPerConnection());
    expect(o.close).toBe('reset');
  });

  it("runs the routers with the image's node flags (the Dockerfile's ENV NODE_OPTIONS) unless told otherwise", () => {
    const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    const flags = /^ENV NODE_OPTIONS="([^"]*)"$/m.exec(dockerfile)![1]!.split(' ');
    expect(flags).toContain('--max-semi-space-size=8');
    expect(parseArgs([]).routerNodeArgs).toEqual(flags);
    expect(parseArgs(['--router-node-args', '']).routerNodeArgs).toEqual([]);
  });

  it('takes --max-requests-per-connection N (0 = never) and --router-node-args', () => {
    expect(parseArgs(['--max-requests-per-connection', '0']).maxRequestsPerConnection).toBe(0);
    expect(parseArgs(['--max-requests-per-connection=250']).maxRequestsPerConnection).toBe(250);
    expect(() => parseArgs(['--max-requests-per-connection', '2.5'])).toThrow();
    expect(parseArgs(['--router-node-args', '--max-semi-space-size=4 --no-opt']).routerNodeArgs).toEqual(['--max-semi-space-size=4', '--no-opt']);
    expect(parseArgs(['--router-node-args=--max-semi-space-size=4']).routerNodeArgs).toEqual(['--max-semi-space-size=4']);
    expect(() => parseArgs(['--quick=1'])).toThrow(/takes no value/);
  });

  it('--only-open-streams measures the fresh open-streams cell alone: no control plane, no streaming, latest.* untouched', () => {
    const o = parseArgs(['--only-open-streams', '--router-transport', 'http2']);
    expect(o.onlyOpenStreams).toBe(true);
    expect(o.skipControlPlane).toBe(true);
    expect(o.streamChunks).toEqual([]);
    expect(o.latest).toBe(false);
    expect(o.routerTransport).toBe('http2');
    expect(parseArgs([]).onlyOpenStreams).toBe(false);
  });
});
