/**
 * Wire compatibility of our trimmed protos with Envoy's upstream API protos
 * (the snapshot shipped in @grpc/grpc-js-xds), per docs/protocol.md §1 and §7.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, isAbsolute, join } from 'node:path';
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { extProcRoot } from '../../src/protocol/codec.js';
import { healthService } from '../../src/protocol/services.js';
import { EXT_PROC_PROTO, HEALTH_PROTO, protosDir } from '../../src/protocol/proto-files.js';
import { OURS_ONLY_TYPES, samples } from './wire-compat-samples.js';

const require = createRequire(import.meta.url);
const xdsDeps = join(dirname(require.resolve('@grpc/grpc-js-xds/package.json')), 'deps');
const protobufjsDir = dirname(require.resolve('protobufjs/package.json'));
const includeDirs = ['envoy-api', 'googleapis', 'xds', 'protoc-gen-validate'].map((d) => join(xdsDeps, d));

function loadUpstream(): protobuf.Root {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => {
    if (isAbsolute(target)) return target;
    // google/protobuf/descriptor.proto is shipped as a file by protobufjs (the others are bundled).
    for (const dir of [...includeDirs, protobufjsDir]) {
      if (existsSync(join(dir, target))) return join(dir, target);
    }
    throw new Error(`upstream import not found: ${target}`);
  };
  root.loadSync([EXT_PROC_PROTO], { keepCase: true });
  root.resolveAll();
  return root;
}

const ours = extProcRoot;
const upstream = loadUpstream();
const EXT = 'envoy.service.ext_proc.v3';
const MODE = 'envoy.extensions.filters.http.ext_proc.v3.ProcessingMode';
const canon: protobuf.IConversionOptions = { longs: String, enums: Number, bytes: String };

/** Fields upstream lacks, with the shape docs/protocol.md §1 gives them. */
const NEWER_FIELDS: Record<string, { id: number; type: string; oneof?: string }> = {
  [`${EXT}.ProcessingRequest.protocol_config`]: { id: 11, type: `${EXT}.ProtocolConfiguration` },
  [`${EXT}.ProtocolConfiguration.request_body_mode`]: { id: 1, type: `${MODE}.BodySendMode` },
  [`${EXT}.ProtocolConfiguration.response_body_mode`]: { id: 2, type: `${MODE}.BodySendMode` },
  [`${EXT}.ProtocolConfiguration.send_body_without_waiting_for_header_response`]: { id: 3, type: 'bool' },
  [`${EXT}.BodyMutation.streamed_response`]: { id: 3, type: `${EXT}.StreamedBodyResponse`, oneof: 'mutation' },
  [`${EXT}.StreamedBodyResponse.body`]: { id: 1, type: 'bytes' },
  [`${EXT}.StreamedBodyResponse.end_of_stream`]: { id: 2, type: 'bool' },
  [`${EXT}.ProcessingResponse.request_drain`]: { id: 12, type: 'bool' },
};
const NEWER_ENUM_VALUES: Record<string, number> = {
  [`${MODE}.BodySendMode.FULL_DUPLEX_STREAMED`]: 4,
  [`${MODE}.BodySendMode.GRPC`]: 5,
};

const bare = (fullName: string): string => fullName.replace(/^\./, '');

function collect(ns: protobuf.NamespaceBase, out: protobuf.ReflectionObject[] = []): protobuf.ReflectionObject[] {
  for (const nested of ns.nestedArray) {
    if (bare(nested.fullName).startsWith('google.')) continue;
    if (nested instanceof protobuf.Type || nested instanceof protobuf.Enum || nested instanceof protobuf.Service) {
      out.push(nested);
    }
    if (nested instanceof protobuf.Namespace) collect(nested, out);
  }
  return out;
}
const ourObjects = collect(ours);
const ourTypes = ourObjects.filter((o): o is protobuf.Type => o instanceof protobuf.Type);
const ourEnums = ourObjects.filter((o): o is protobuf.Enum => o instanceof protobuf.Enum);

function shape(f: protobuf.Field) {
  f.resolve();
  return {
    id: f.id,
    type: f.resolvedType ? bare(f.resolvedType.fullName) : f.type,
    repeated: f.repeated,
    map: f.map,
    keyType: f instanceof protobuf.MapField ? f.keyType : undefined,
    oneof: f.partOf?.name,
  };
}

function upstreamLookup(fullName: string): protobuf.ReflectionObject | null {
  return upstream.lookup(fullName);
}

describe('reflection: our declarations agree with upstream', () => {
  it('declares exactly the message types the samples cover', () => {
    const names = ourTypes.map((t) => bare(t.fullName)).sort();
    expect(names).toEqual([...new Set(samples.map((s) => s.type))].sort());
    expect(names).toHaveLength(21);
  });

  it.each(ourTypes.map((t) => [bare(t.fullName), t] as const))('%s: fields match by name, number, type, label, map and oneof', (name, t) => {
    const up = upstreamLookup(name);
    if (OURS_ONLY_TYPES.has(name)) {
      expect(up).toBeNull();
    } else {
      expect(up).toBeInstanceOf(protobuf.Type);
    }
    for (const f of t.fieldsArray) {
      const key = `${name}.${f.name}`;
      const upField = up instanceof protobuf.Type ? up.fields[f.name] : undefined;
      if (upField) {
        expect(shape(f), key).toEqual(shape(upField));
        expect(NEWER_FIELDS[key], `${key} is in upstream, not a newer field`).toBeUndefined();
      } else {
        const want = NEWER_FIELDS[key];
        expect(want, `${key} is neither upstream nor in docs/protocol.md`).toBeDefined();
        expect({ id: f.id, type: shape(f).type, oneof: f.partOf?.name }).toEqual({ oneof: undefined, ...want });
        if (up instanceof protobuf.Type) expect(up.fieldsById[f.id], `${key} number taken upstream`).toBeUndefined();
      }
    }
  });

  it('declares every newer field docs/protocol.md lists', () => {
    for (const key of Object.keys(NEWER_FIELDS)) {
      const at = key.lastIndexOf('.');
      expect(ours.lookupType(key.slice(0, at)).fields[key.slice(at + 1)], key).toBeDefined();
    }
  });

  it('omits streamed_immediate_response (11) without reusing its number', () => {
    const resp = ours.lookupType(`${EXT}.ProcessingResponse`);
    expect(resp.fieldsById[11]).toBeUndefined();
    expect(resp.fields['streamed_immediate_response']).toBeUndefined();
  });

  it('keeps upstream reserved numbers and names', () => {
    const req = ours.lookupType(`${EXT}.ProcessingRequest`);
    const upReq = upstream.lookupType(`${EXT}.ProcessingRequest`);
    expect(req.reserved).toEqual(upReq.reserved);
  });

  it.each(ourEnums.map((e) => [bare(e.fullName), e] as const))('enum %s: values match upstream', (name, e) => {
    const up = upstream.lookupEnum(name);
    for (const [valueName, num] of Object.entries(e.values)) {
      const key = `${name}.${valueName}`;
      if (up.values[valueName] !== undefined) {
        expect(num, key).toBe(up.values[valueName]);
      } else {
        expect(num, `${key} is neither upstream nor in docs/protocol.md`).toBe(NEWER_ENUM_VALUES[key]);
        expect(up.valuesById[num], `${key} number taken upstream`).toBeUndefined();
      }
    }
  });

  it('ExternalProcessor.Process matches upstream (bidi, same message types)', () => {
    const mine = ours.lookupService(`${EXT}.ExternalProcessor`).methods['Process'];
    const theirs = upstream.lookupService(`${EXT}.ExternalProcessor`).methods['Process'];
    const sig = (m: protobuf.Method | undefined) => m && {
      req: bare((m.resolve(), m.resolvedRequestType!.fullName)),
      res: bare(m.resolvedResponseType!.fullName),
      reqStream: m.requestStream,
      resStream: m.responseStream,
    };
    expect(sig(mine)).toEqual(sig(theirs));
    expect(sig(mine)).toMatchObject({ reqStream: true, resStream: true });
  });
});

function roundTrip(from: protobuf.Type, to: protobuf.Type, value: Record<string, unknown>) {
  const bytes = from.encode(from.fromObject(value)).finish();
  const decoded = to.decode(bytes);
  return { bytes: Buffer.from(bytes), decoded, object: to.toObject(decoded, canon) };
}

/** Marks every field set (non-default) in `value`, recursing into nested messages, maps and lists. */
function cover(type: protobuf.Type, value: Record<string, unknown>, seen: Set<string>): void {
  for (const [name, v] of Object.entries(value)) {
    const f = type.fields[name];
    if (!f || v === undefined || v === null || v === '' || v === 0 || v === false) continue;
    seen.add(`${bare(type.fullName)}.${name}`);
    const t = f.resolve().resolvedType;
    if (!(t instanceof protobuf.Type)) continue;
    const items = f.map ? Object.values(v as object) : f.repeated ? (v as unknown[]) : [v];
    for (const item of items) cover(t, item as Record<string, unknown>, seen);
  }
}

describe('sample coverage', () => {
  it('sets every field of every message type we declare, and each oneof member in its own sample', () => {
    const seen = new Set<string>();
    for (const s of samples) cover(ours.lookupType(s.type), s.value, seen);
    const all = ourTypes.flatMap((t) => t.fieldsArray.map((f) => `${bare(t.fullName)}.${f.name}`));
    expect(all.filter((name) => !seen.has(name))).toEqual([]);
    for (const t of ourTypes) {
      for (const oneof of t.oneofsArray) {
        const members = samples.filter((s) => s.type === bare(t.fullName) && s.oneof?.[0] === oneof.name).map((s) => s.oneof![1]);
        expect(new Set(members), `${t.fullName}.${oneof.name}`).toEqual(new Set(oneof.oneof));
      }
    }
  });
});

describe('round trips, field for field', () => {
  it.each(samples.map((s) => [`${s.type} ${s.name}`, s] as const))('%s', (_label, s) => {
    const mine = ours.lookupType(s.type);
    // Our own round trip keeps every field, the newer ones included.
    const self = roundTrip(mine, mine, s.value);
    expect(self.object).toEqual(s.value);
    if (OURS_ONLY_TYPES.has(s.type)) return;

    const theirs = upstream.lookupType(s.type);
    const seen = s.upstreamSees ?? s.value;
    const toUpstream = roundTrip(mine, theirs, s.value);
    expect(toUpstream.object).toEqual(seen);
    const fromUpstream = roundTrip(theirs, mine, seen);
    expect(fromUpstream.object).toEqual(seen);
    if (!s.upstreamSees) {
      // Same fields, same numbers, same order: the encodings are identical.
      expect(fromUpstream.bytes.equals(toUpstream.bytes)).toBe(true);
    }
    if (s.oneof) {
      const [oneofName, member] = s.oneof;
      const rec = (m: unknown) => (m as Record<string, unknown>)[oneofName];
      expect(rec(self.decoded)).toBe(member);
      expect(rec(fromUpstream.decoded)).toBe(s.upstreamSees && !(member in s.upstreamSees) ? undefined : member);
      if (!s.upstreamSees || member in s.upstreamSees) expect(rec(toUpstream.decoded)).toBe(member);
    }
  });

  it('upstream skips the newer fields without error and keeps the rest', () => {
    const newer = samples.filter((s) => s.upstreamSees && !OURS_ONLY_TYPES.has(s.type));
    expect(newer.map((s) => s.type).sort()).toEqual([`${EXT}.BodyMutation`, `${EXT}.ProcessingRequest`, `${EXT}.ProcessingResponse`]);
    for (const s of newer) {
      const mine = ours.lookupType(s.type);
      const bytes = mine.encode(mine.fromObject(s.value)).finish();
      const theirs = upstream.lookupType(s.type);
      const decoded = theirs.decode(bytes);
      expect(theirs.verify(decoded)).toBeNull();
      expect(theirs.toObject(decoded, canon)).toEqual(s.upstreamSees);
      // The skipped fields really were on the wire: upstream's re-encoding is shorter.
      expect(theirs.encode(decoded).finish().length).toBeLessThan(bytes.length);
    }
  });

  it('we skip the upstream fields we leave out (HttpHeaders.attributes = 2, deprecated)', () => {
    const theirs = upstream.lookupType(`${EXT}.HttpHeaders`);
    expect(ours.lookupType(`${EXT}.HttpHeaders`).fieldsById[2]).toBeUndefined();
    const value = { headers: { headers: [{ key: 'k', raw_value: 'dg==' }] }, end_of_stream: true };
    const bytes = theirs.encode(theirs.fromObject({ ...value, attributes: { a: { fields: { x: { stringValue: 'y' } } } } })).finish();
    const mine = ours.lookupType(`${EXT}.HttpHeaders`);
    expect(mine.toObject(mine.decode(bytes), canon)).toEqual(value);
  });
});

describe('grpc.health.v1 (no upstream copy here: checked by hand)', () => {
  const health = new protobuf.Root();
  health.resolvePath = (_o, t) => (isAbsolute(t) ? t : join(protosDir(), t));
  health.loadSync([HEALTH_PROTO], { keepCase: true });
  const req = health.lookupType('grpc.health.v1.HealthCheckRequest');
  const res = health.lookupType('grpc.health.v1.HealthCheckResponse');

  it('declares service=1, status=1 and the four serving states', () => {
    expect(shape(req.fields['service']!)).toMatchObject({ id: 1, type: 'string', repeated: false });
    expect(shape(res.fields['status']!)).toMatchObject({ id: 1, type: 'grpc.health.v1.HealthCheckResponse.ServingStatus' });
    expect(health.lookupEnum('grpc.health.v1.HealthCheckResponse.ServingStatus').values).toEqual({
      UNKNOWN: 0, SERVING: 1, NOT_SERVING: 2, SERVICE_UNKNOWN: 3,
    });
    const svc = health.lookupService('grpc.health.v1.Health');
    expect(Object.keys(svc.methods).sort()).toEqual(['Check', 'Watch']);
    expect(svc.methods['Watch']!.requestStream).toBeFalsy();
    expect(svc.methods['Watch']!.responseStream).toBe(true);
  });

  it('encodes to the hand-computed bytes, through protobufjs and the grpc-js service definition', () => {
    const reqBytes = Buffer.from('0a13696e666572656e63652d657874656e73696f6e', 'hex'); // service="inference-extension"
    expect(Buffer.from(req.encode({ service: 'inference-extension' }).finish()).equals(reqBytes)).toBe(true);
    expect(healthService['Check']!.requestSerialize({ service: 'inference-extension' }).equals(reqBytes)).toBe(true);
    expect(Buffer.from(res.encode({ status: 2 }).finish()).toString('hex')).toBe('0802');
    expect(healthService['Check']!.responseSerialize({ status: 'SERVICE_UNKNOWN' }).toString('hex')).toBe('0803');
    expect(healthService['Check']!.responseDeserialize(Buffer.from('0801', 'hex'))).toEqual({ status: 1 });
  });
});
