import { describe, expect, it } from 'vitest';
import { messageType } from '../../src/protocol/codec.js';
import type { Struct } from '../../src/protocol/messages.js';
import { fromStruct, fromValue, toStruct, toValue, type JsonObject } from '../../src/protocol/struct.js';

const StructType = messageType('google.protobuf.Struct');

describe('struct', () => {
  const json: JsonObject = {
    s: 'x',
    n: 2.5,
    t: true,
    f: false,
    z: null,
    l: ['10.0.0.1:80', 3, [true]],
    o: { inner: { deep: 'v' } },
    empty: {},
  };

  it('maps JSON to Struct members', () => {
    const s = toStruct(json);
    expect(s.fields['s']).toEqual({ stringValue: 'x' });
    expect(s.fields['z']).toEqual({ nullValue: 0 });
    expect(s.fields['f']).toEqual({ boolValue: false });
    expect(s.fields['l']?.listValue?.values).toHaveLength(3);
    expect(toValue({ a: 1 })).toEqual({ structValue: { fields: { a: { numberValue: 1 } } } });
  });

  it('survives an encode/decode round trip, falsy values included', () => {
    const decoded = StructType.decode(StructType.encode(toStruct(json) as never).finish()) as unknown as Struct;
    expect(fromStruct(decoded)).toEqual(json);
  });

  it('reads plain (not decoded) Structs and empty inputs', () => {
    expect(fromStruct(toStruct(json))).toEqual(json);
    expect(fromStruct(null)).toEqual({});
    expect(fromValue(undefined)).toBeNull();
    // A decoded Value with no member set reads as null, not as its default string.
    const unset = messageType('google.protobuf.Value').decode(Buffer.alloc(0));
    expect(fromValue(unset as never)).toBeNull();
  });
});
