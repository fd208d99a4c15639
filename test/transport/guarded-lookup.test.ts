import type { LookupAddress } from 'node:dns';
import { describe, expect, it } from 'vitest';
import { answerRules } from '../../src/config/answer-rules.js';
import { eppAnswersSchema } from '../../src/config/schema.js';
import { destinationJudge, DestinationRefusedError, guardedLookup } from '../../src/transport/guarded-lookup.js';

/** A resolver that answers every name with `addresses`. */
const resolver = (addresses: LookupAddress[]) => (_h: string, _o: object, cb: (e: NodeJS.ErrnoException | null, a: LookupAddress[]) => void) => cb(null, addresses);

function lookupWith(addresses: LookupAddress[], all: boolean): Promise<{ err: Error | null; address: unknown; family?: number }> {
  const rules = answerRules(eppAnswersSchema.parse({}));
  const lookup = guardedLookup(destinationJudge(rules, 'cluster-b', 9002), resolver(addresses));
  return new Promise((resolve) => lookup('lb.example.com', { all }, (err, address, family) => resolve({ err, address, family })));
}

describe('guardedLookup with a member\'s destination rules', () => {
  it('answers allowed addresses in the form asked for', async () => {
    const addrs = [{ address: '10.0.0.1', family: 4 }, { address: '2001:db8::1', family: 6 }];
    expect(await lookupWith(addrs, true)).toEqual({ err: null, address: addrs, family: undefined });
    expect(await lookupWith(addrs, false)).toEqual({ err: null, address: '10.0.0.1', family: 4 });
  });

  it.each([
    ['127.0.0.1', 4, '127.0.0.1:9002'],
    ['169.254.169.254', 4, '169.254.169.254:9002'],
    ['::ffff:169.254.169.254', 6, '[::ffff:169.254.169.254]:9002'],
    ['::1', 6, '[::1]:9002'],
  ])('refuses a name that resolves to %s, even next to an allowed address', async (address, family, endpoint) => {
    for (const all of [true, false]) {
      const { err } = await lookupWith([{ address: '10.0.0.1', family: 4 }, { address, family }], all);
      expect(err).toBeInstanceOf(DestinationRefusedError);
      expect((err as DestinationRefusedError).code).toBe('EDESTINATIONREFUSED');
      expect(err!.message).toBe(`lb.example.com resolved to ${address}, which is refused: ${endpoint} is inside destinations.deny (clusters[cluster-b].eppAnswers.destinations)`);
    }
  });

  it('passes resolver errors on, and treats no address as not found', async () => {
    const failing = guardedLookup(() => undefined, (_h, _o, cb) => cb(Object.assign(new Error('nope'), { code: 'ENOTFOUND' }), []));
    const err = await new Promise<Error | null>((resolve) => failing('x.invalid', {}, (e) => resolve(e)));
    expect((err as NodeJS.ErrnoException).code).toBe('ENOTFOUND');
    expect((await lookupWith([], false)).err).toMatchObject({ code: 'ENOTFOUND' });
  });
});
