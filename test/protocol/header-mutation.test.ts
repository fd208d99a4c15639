import { describe, expect, it } from 'vitest';
import { decodeResponse } from '../../src/protocol/codec.js';
import { encodeRequestHeaderMutation, withRequestHeaderMutation } from '../../src/protocol/header-mutation.js';
import { continueHeaders } from '../../src/protocol/responses.js';

const MOD = { set: [{ name: 'x-tier', value: 'gold' }], add: [{ name: 'x-multi', value: 'b' }], remove: ['x-drop'] };

describe('request header mutation fragment', () => {
  it('sets with append=false, adds with append=true, in raw_value (what Envoy reads), and removes', () => {
    const m = decodeResponse(encodeRequestHeaderMutation(MOD)).request_headers!.response!.header_mutation!;
    expect(m.set_headers!.map((o) => [o.header!.key, Buffer.from(o.header!.raw_value!).toString(), o.append?.value])).toEqual([
      ['x-tier', 'gold', false],
      ['x-multi', 'b', true],
    ]);
    expect(m.remove_headers).toEqual(['x-drop']);
  });

  it('appended to an encoded answer, it is the same bytes after it: the answer itself is not re-encoded', () => {
    const answer = continueHeaders('request_headers');
    const out = withRequestHeaderMutation(answer, encodeRequestHeaderMutation(MOD));
    expect(out.subarray(0, answer.length)).toEqual(answer);
    expect(out.length).toBe(answer.length + encodeRequestHeaderMutation(MOD).length);
  });
});
