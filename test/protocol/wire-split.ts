// A hostile encoder for the differential fuzz: rewrites an encoded message into one a
// merging parser reads the same, by splitting singular embedded messages (at any depth)
// into several occurrences spread among their siblings, adding earlier decoy occurrences
// of string and bytes fields (the last one wins) and of map entries (the last entry for
// a key wins), and sometimes interleaving another member of a oneof, which changes the
// meaning: wire-canonical.ts, not the message split, is then the oracle.
import type { Rng } from '../helpers/fuzz.js';
import { lenOccurrence, occurrences, parsedAs, type FieldInfo, type Schema } from './wire-canonical.js';

export interface SplitOptions {
  /** A payload for a decoy of a message of `schema` (an empty message when undefined). */
  decoyMessage(r: Rng, schema: Schema): Buffer | undefined;
  /** A decoy value for a string or bytes field. */
  decoyText(r: Rng, field: FieldInfo): string;
}

const LEN = 2;

function tagBytes(no: number, wireType: number): Buffer {
  const out: number[] = [];
  let n = ((no << 3) | wireType) >>> 0;
  while (n >= 0x80) {
    out.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  out.push(n);
  return Buffer.from(out);
}

/** One occurrence of field `no` with a decoy value of the kind `f` is parsed as. */
function decoyOccurrence(r: Rng, no: number, f: FieldInfo, o: SplitOptions): Buffer {
  if (f.schema !== undefined) return lenOccurrence(no, o.decoyMessage(r, f.schema) ?? Buffer.alloc(0));
  if (f.wireType === LEN) return lenOccurrence(no, Buffer.from(o.decoyText(r, f), 'utf8'));
  if (f.wireType === 1) return Buffer.concat([tagBytes(no, 1), r.bytes(8)]);
  if (f.wireType === 5) return Buffer.concat([tagBytes(no, 5), r.bytes(4)]);
  return Buffer.concat([tagBytes(no, 0), Buffer.from([r.int(3)])]);
}

/** `payload` cut at field boundaries into 2 or 3 pieces (some possibly empty). */
function pieces(r: Rng, payload: Buffer): Buffer[] {
  const occ = occurrences(payload);
  const cuts = new Set<number>();
  for (let n = 1 + r.int(2); n > 0; n--) cuts.add(r.int(occ.length + 1));
  const sorted = [...cuts].sort((a, b) => a - b);
  const out: Buffer[] = [];
  let from = 0;
  for (const c of [...sorted, occ.length]) {
    out.push(Buffer.concat(occ.slice(from, c).map((x) => x.raw)));
    from = c;
  }
  return out;
}

/**
 * A hostile encoding of the message `buf` of `schema`. Without oneof interleaving
 * (chance `interleave`) it means the same to a merging parser.
 */
export function splitMessage(r: Rng, buf: Buffer, schema: Schema, o: SplitOptions, interleave = 0.15, depth = 0): Buffer {
  const occ = occurrences(buf);
  // slots[i]: what stands at occurrence i's place; later pieces of a split field go to later slots.
  const slots: Buffer[][] = occ.map(() => []);
  const later: { at: number; bytes: Buffer }[] = [];
  const splitChance = depth === 0 ? 0.6 : 0.4;
  occ.forEach((oc, i) => {
    const f = parsedAs(schema, oc);
    const slot = slots[i]!;
    if (f === undefined || (f.kind !== 'message' && f.schema === undefined && !(f.kind === 'scalar' && f.text))) {
      slot.push(oc.raw);
      return;
    }
    const others = f.oneof === undefined ? [] : [...schema.fields].filter(([n, g]) => g.oneof === f.oneof && n !== oc.no);
    const otherMember = (): Buffer => {
      const [no, g] = r.pick(others);
      return decoyOccurrence(r, no, g, o);
    };
    if (f.kind === 'scalar') {
      if (r.chance(0.3)) slot.push(decoyOccurrence(r, oc.no, f, o));
      // Another member before this one is cleared by it; after it, it clears this one.
      const interleaved = others.length > 0 && r.chance(interleave);
      const before = interleaved && r.chance(0.5);
      if (before) slot.push(otherMember());
      slot.push(oc.raw);
      if (interleaved && !before) slot.push(otherMember());
      return;
    }
    const payload = r.chance(0.85) ? splitMessage(r, oc.payload!, f.schema!, o, interleave, depth + 1) : oc.payload!;
    if (f.kind === 'repeated') {
      if (f.schema!.type === undefined && r.chance(0.2)) slot.push(decoyEntry(r, oc.payload!, f.schema!, o, oc.no));
      slot.push(lenOccurrence(oc.no, payload));
      return;
    }
    const parts = r.chance(splitChance) ? pieces(r, payload) : [payload];
    const occs = parts.map((p) => lenOccurrence(oc.no, p));
    if (others.length > 0 && r.chance(interleave)) occs.splice(r.int(occs.length + 1), 0, otherMember());
    slot.push(occs[0]!);
    // The rest go to this or later slots, in order.
    let at = i;
    for (const x of occs.slice(1)) {
      at += r.int(occ.length - at);
      later.push({ at, bytes: x });
    }
  });
  for (const { at, bytes } of later) slots[at]!.push(bytes);
  return Buffer.concat(slots.flat());
}

/** An earlier map entry with the same key and a decoy value (the later entry wins). */
function decoyEntry(r: Rng, entry: Buffer, schema: Schema, o: SplitOptions, no: number): Buffer {
  const keyNo = [...schema.fields].find(([, f]) => f.name === 'key')![0];
  const [valueNo, value] = [...schema.fields].find(([, f]) => f.name === 'value')!;
  const key = occurrences(entry).filter((x) => x.no === keyNo).map((x) => x.raw);
  return lenOccurrence(no, Buffer.concat([...key, decoyOccurrence(r, valueNo, value, o)]));
}
