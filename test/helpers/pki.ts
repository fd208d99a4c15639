// Certificates generated for a test with the openssl CLI: a CA and leaves it signs
// (server certificates with the SANs asked for, client certificates for mTLS).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Leaf {
  readonly certPath: string;
  readonly keyPath: string;
  readonly cert: Buffer;
  readonly key: Buffer;
}

export interface TestCa {
  readonly dir: string;
  readonly certPath: string;
  readonly cert: Buffer;
  /** A leaf signed by this CA. `sans` like ["DNS:epp.example", "IP:127.0.0.1"]; empty for a client certificate. */
  leaf(name: string, sans: readonly string[], usage?: 'server' | 'client'): Leaf;
  /** A server leaf signed by this CA whose validity ended long ago (2020-01-01 to 2020-01-02), like a certificate a server kept serving past its renewal. */
  expiredLeaf(name: string, sans: readonly string[]): Leaf;
  remove(): void;
}

const openssl = (args: readonly string[]): void => {
  execFileSync('openssl', args, { stdio: 'pipe' });
};

/** A new CA (EC P-256, valid one day) in a fresh temporary directory. */
export function createTestCa(name = 'mcip test CA', dir = mkdtempSync(join(tmpdir(), 'mcip-pki-'))): TestCa {
  const caKey = join(dir, `${name.replace(/\W+/g, '-')}-ca.key`);
  const caCert = join(dir, `${name.replace(/\W+/g, '-')}-ca.pem`);
  openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', caKey, '-out', caCert, '-days', '1', '-subj', `/CN=${name}`]);
  let serial = 0;
  return {
    dir,
    certPath: caCert,
    cert: readFileSync(caCert),
    leaf(leafName, sans, usage = 'server') {
      serial += 1;
      const base = join(dir, `${leafName.replace(/\W+/g, '-')}-${serial}`);
      const ext = `${base}.ext`;
      writeFileSync(
        ext,
        [
          'basicConstraints=CA:FALSE',
          'keyUsage=digitalSignature,keyEncipherment',
          `extendedKeyUsage=${usage === 'server' ? 'serverAuth' : 'clientAuth'}`,
          ...(sans.length > 0 ? [`subjectAltName=${sans.join(',')}`] : []),
        ].join('\n'),
      );
      openssl(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${base}.key`, '-out', `${base}.csr`, '-subj', `/CN=${leafName}`]);
      openssl(['x509', '-req', '-in', `${base}.csr`, '-CA', caCert, '-CAkey', caKey, '-set_serial', String(serial + 1000), '-days', '1', '-extfile', ext, '-out', `${base}.pem`]);
      return { certPath: `${base}.pem`, keyPath: `${base}.key`, cert: readFileSync(`${base}.pem`), key: readFileSync(`${base}.key`) };
    },
    expiredLeaf(leafName, sans) {
      serial += 1;
      const base = join(dir, `${leafName.replace(/\W+/g, '-')}-${serial}`);
      // `openssl ca` is the CLI that sets explicit validity dates: a throwaway database and config per leaf.
      writeFileSync(`${base}.index`, '');
      writeFileSync(`${base}.serial`, String(serial + 1000));
      writeFileSync(
        `${base}.cnf`,
        [
          '[ca]', 'default_ca = c', '[c]', `database = ${base}.index`, `new_certs_dir = ${dir}`, `serial = ${base}.serial`, 'default_md = sha256', 'policy = p', 'x509_extensions = ext',
          '[p]', 'commonName = supplied',
          '[ext]', 'basicConstraints = CA:FALSE', 'keyUsage = digitalSignature,keyEncipherment', 'extendedKeyUsage = serverAuth', `subjectAltName = ${sans.join(',')}`,
        ].join('\n'),
      );
      openssl(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${base}.key`, '-out', `${base}.csr`, '-subj', `/CN=${leafName}`]);
      openssl(['ca', '-batch', '-config', `${base}.cnf`, '-cert', caCert, '-keyfile', caKey, '-in', `${base}.csr`, '-out', `${base}.pem`, '-notext', '-startdate', '20200101000000Z', '-enddate', '20200102000000Z']);
      return { certPath: `${base}.pem`, keyPath: `${base}.key`, cert: readFileSync(`${base}.pem`), key: readFileSync(`${base}.key`) };
    },
    remove() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A self-signed server certificate, as a stock EPP generates at start: its own issuer (no CA
 * to trust), EC P-256, serverAuth, no subject alternative name. In a fresh temporary directory.
 */
export function selfSignedLeaf(name: string, dir = mkdtempSync(join(tmpdir(), 'mcip-pki-'))): Leaf & { remove(): void } {
  const base = join(dir, name.replace(/\W+/g, '-'));
  openssl([
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${base}.key`, '-out', `${base}.pem`, '-days', '1',
    '-subj', `/O=${name}`, '-addext', 'basicConstraints=critical,CA:FALSE', '-addext', 'keyUsage=critical,digitalSignature,keyEncipherment', '-addext', 'extendedKeyUsage=serverAuth',
  ]);
  return {
    certPath: `${base}.pem`,
    keyPath: `${base}.key`,
    cert: readFileSync(`${base}.pem`),
    key: readFileSync(`${base}.key`),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
