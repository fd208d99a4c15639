import type { LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { Client, credentials, type ServiceError } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { DestinationRefusedError, guardedLookup } from '../../src/transport/guarded-lookup.js';
import { guardedChannelOptions, guardedTarget, WatchedLookup } from '../../src/transport/guarded-resolver.js';
import { scriptedDns, startDialPeer, type DialPeer } from '../helpers/dial-peer.js';

const peers: DialPeer[] = [];
const clients: Client[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await Promise.all(peers.splice(0).map((p) => p.close()));
});

/** One unary call (raw bytes) on a channel to `name:port` resolved by `lookup`: the answer, or the error. */
function unary(name: string, port: number, lookup: LookupFunction | undefined): Promise<{ answer?: Buffer; error?: ServiceError }> {
  const client = new Client(guardedTarget(`${name}:${port}`), credentials.createInsecure(), lookup ? guardedChannelOptions(lookup) : {});
  clients.push(client);
  const id = (b: Buffer): Buffer => b;
  return new Promise((resolve) =>
    client.makeUnaryRequest('/test.Echo/Echo', id, id, Buffer.from('ping'), { deadline: Date.now() + 3000 }, (error, answer) =>
      resolve(error ? { error } : { ...(answer ? { answer } : {}) }),
    ),
  );
}

const denyLoopback = (address: string): string | undefined => (address.startsWith('127.') ? 'loopback is denied' : undefined);

describe('a grpc-js channel resolved by a guarded lookup', () => {
  it('dials the addresses the lookup answers, sending the name as the authority', async () => {
    const peer = await startDialPeer('127.0.0.1');
    peers.push(peer);
    const dns = scriptedDns(() => ['127.0.0.1']);
    const r = await unary('epp.example', peer.port, guardedLookup(() => undefined, dns.resolve));
    expect(r.answer?.toString()).toBe('ping');
    expect(dns.asked()).toBe(1);
  });

  it('opens no connection to a refused address and fails the call with the refusal (UNAVAILABLE)', async () => {
    const peer = await startDialPeer('127.0.0.1');
    peers.push(peer);
    const r = await unary('epp.example', peer.port, guardedLookup(denyLoopback, scriptedDns(() => ['127.0.0.1']).resolve));
    expect(r.error?.code).toBe(14);
    expect(r.error?.details).toContain('epp.example resolved to 127.0.0.1, which is refused: loopback is denied');
    expect(peer.connections()).toBe(0);
  });

  it('fails its calls, dialling nothing, when the channel was given no lookup', async () => {
    const r = await unary('epp.example', 9, undefined);
    expect(r.error?.details).toContain('channel option mcip.guarded_lookup missing');
  });
});

describe('WatchedLookup', () => {
  const ask = (w: WatchedLookup): Promise<Error | null> => new Promise((resolve) => w.lookup('epp.example', { all: true }, (err) => resolve(err)));

  it('remembers the last refusal, and says when a name that resolved somewhere allowed moved to a refused address', async () => {
    let answer: LookupAddress[] = [{ address: '127.0.0.1', family: 4 }];
    const w = new WatchedLookup(guardedLookup(denyLoopback, (_h, _o, cb) => cb(null, answer)));
    expect(await ask(w)).toBeInstanceOf(DestinationRefusedError);
    expect(w.refusal?.address).toBe('127.0.0.1');
    expect(w.moved).toBe(false);
    answer = [{ address: '10.0.0.1', family: 4 }];
    expect(await ask(w)).toBeNull();
    expect(w.refusal).toBeUndefined();
    expect(w.moved).toBe(false);
    answer = [{ address: '127.0.0.2', family: 4 }];
    expect(await ask(w)).toBeInstanceOf(DestinationRefusedError);
    expect(w.moved).toBe(true);
  });
});
