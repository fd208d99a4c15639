/**
 * A self-signed server certificate made at start, for a TLS port that has no
 * certificate files: an EC P-256 key from node:crypto and an X.509 v3
 * certificate written in DER here (Node can parse certificates but not make
 * them). The gateways that call an Endpoint Picker over TLS do not verify it,
 * so the certificate carries no particular name; it names the Service's DNS
 * names when given, so a client that does verify (with this certificate as its
 * CA) can.
 */
import { generateKeyPairSync, randomBytes, sign } from 'node:crypto';

export interface SelfSignedCertificate {
  /** PEM certificate. */
  readonly cert: Buffer;
  /** PEM PKCS#8 private key. */
  readonly key: Buffer;
}

export interface SelfSignedOptions {
  /** Subject common name. */
  readonly commonName: string;
  /** subjectAltName DNS entries (may be empty). */
  readonly dnsNames: readonly string[];
  /** Validity in days from `now` (default 365). */
  readonly days?: number;
  readonly now?: Date;
}

// DER: tag, length, content.
const der = (tag: number, ...parts: Buffer[]): Buffer => {
  const body = Buffer.concat(parts);
  const n = body.length;
  const len = n < 0x80 ? Buffer.from([n]) : n < 0x100 ? Buffer.from([0x81, n]) : n < 0x10000 ? Buffer.from([0x82, n >> 8, n & 0xff]) : Buffer.from([0x83, n >> 16, (n >> 8) & 0xff, n & 0xff]);
  return Buffer.concat([Buffer.from([tag]), len, body]);
};
const seq = (...parts: Buffer[]): Buffer => der(0x30, ...parts);
const set = (...parts: Buffer[]): Buffer => der(0x31, ...parts);
const utf8 = (s: string): Buffer => der(0x0c, Buffer.from(s, 'utf8'));
const bool = (b: boolean): Buffer => der(0x01, Buffer.from([b ? 0xff : 0]));
const octets = (b: Buffer): Buffer => der(0x04, b);
const bits = (b: Buffer, unused = 0): Buffer => der(0x03, Buffer.from([unused]), b);

function oid(dotted: string): Buffer {
  const [a, b, ...rest] = dotted.split('.').map(Number) as [number, number, ...number[]];
  const out = [40 * a + b];
  for (const n of rest) {
    const groups = [n & 0x7f];
    for (let v = Math.floor(n / 128); v > 0; v = Math.floor(v / 128)) groups.unshift((v & 0x7f) | 0x80);
    out.push(...groups);
  }
  return der(0x06, Buffer.from(out));
}

/** A positive INTEGER from big-endian bytes. */
function uint(bytes: Buffer): Buffer {
  let b = bytes;
  while (b.length > 1 && b[0] === 0 && (b[1]! & 0x80) === 0) b = b.subarray(1);
  return der(0x02, (b[0]! & 0x80) !== 0 ? Buffer.concat([Buffer.from([0]), b]) : b);
}

/** UTCTime through 2049, GeneralizedTime after (RFC 5280 4.1.2.5). */
function time(d: Date): Buffer {
  const iso = d.toISOString().replace(/[-:T]/g, '').slice(0, 14); // YYYYMMDDHHMMSS
  return d.getUTCFullYear() < 2050 ? der(0x17, Buffer.from(`${iso.slice(2)}Z`)) : der(0x18, Buffer.from(`${iso}Z`));
}

const OID = {
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  commonName: '2.5.4.3',
  organization: '2.5.4.10',
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  subjectAltName: '2.5.29.17',
  serverAuth: '1.3.6.1.5.5.7.3.1',
} as const;

const extension = (id: string, critical: boolean, value: Buffer): Buffer => seq(oid(id), ...(critical ? [bool(true)] : []), octets(value));

const pem = (label: string, body: Buffer): Buffer =>
  Buffer.from(`-----BEGIN ${label}-----\n${body.toString('base64').replace(/.{64}/g, '$&\n').replace(/\n?$/, '\n')}-----END ${label}-----\n`);

/** Makes a new key and a certificate signed by it: serverAuth, not a CA, the given DNS names. */
export function selfSignedCertificate(o: SelfSignedOptions): SelfSignedCertificate {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const now = o.now ?? new Date();
  const notBefore = new Date(now.getTime() - 60_000); // a peer's clock a little behind still accepts it
  const notAfter = new Date(now.getTime() + (o.days ?? 365) * 86_400_000);
  const name = seq(
    set(seq(oid(OID.organization), utf8('mcip-router'))),
    set(seq(oid(OID.commonName), utf8(o.commonName))),
  );
  const sigAlg = seq(oid(OID.ecdsaWithSha256));
  const serial = randomBytes(16);
  serial[0]! &= 0x7f;
  const extensions = [
    extension(OID.basicConstraints, true, seq()),
    // digitalSignature (bit 0): all an ECDHE-ECDSA server key does.
    extension(OID.keyUsage, true, bits(Buffer.from([0x80]), 7)),
    extension(OID.extKeyUsage, false, seq(oid(OID.serverAuth))),
  ];
  if (o.dnsNames.length > 0) {
    extensions.push(extension(OID.subjectAltName, false, seq(...o.dnsNames.map((n) => der(0x82, Buffer.from(n, 'ascii'))))));
  }
  const tbs = seq(
    der(0xa0, uint(Buffer.from([2]))), // v3
    uint(serial),
    sigAlg,
    name,
    seq(time(notBefore), time(notAfter)),
    name,
    publicKey.export({ type: 'spki', format: 'der' }),
    der(0xa3, seq(...extensions)),
  );
  const signature = sign('sha256', tbs, privateKey); // DER ECDSA-Sig-Value
  const certificate = seq(tbs, sigAlg, bits(signature));
  return {
    cert: pem('CERTIFICATE', certificate),
    key: Buffer.from(privateKey.export({ type: 'pkcs8', format: 'pem' })),
  };
}
