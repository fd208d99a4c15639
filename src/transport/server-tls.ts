/**
 * TLS of a server the router runs (the picker ports): what to serve
 * (ServerTls, built from `endpointPicker.tls`) and the certificate served now
 * (ServedCertificate): read from files and re-read when they change, with no
 * restart (a new connection gets the new certificate, open ones keep theirs;
 * files that do not make a usable pair leave the last good one in use), or a
 * self-signed one made at start.
 */
import { createSecureContext } from 'node:tls';
import type { Logger } from 'pino';
import type { PickerTlsConfig } from '../config/picker-tls-schema.js';
import { CredentialFiles } from '../credentials/credential-files.js';
import { selfSignedCertificate } from '../credentials/self-signed.js';

export type ServerTls =
  /** Certificate chain and key from PEM files, checked for changes every `pollIntervalMs`. */
  | { readonly kind: 'files'; readonly certFile: string; readonly keyFile: string; readonly pollIntervalMs: number }
  /** A certificate made at start, naming `dnsNames` (may be empty). */
  | { readonly kind: 'self-signed'; readonly dnsNames: readonly string[] }
  | { readonly kind: 'plaintext' };

/** `endpointPicker.tls` as a ServerTls: files when given, plaintext when asked, else self-signed for the Service's DNS names. */
export function serverTlsFromConfig(tls: PickerTlsConfig, o: { readonly pollIntervalMs: number; readonly dnsNames: readonly string[] }): ServerTls {
  if (tls.plaintext) return { kind: 'plaintext' };
  if (tls.certFile !== undefined && tls.keyFile !== undefined) {
    return { kind: 'files', certFile: tls.certFile, keyFile: tls.keyFile, pollIntervalMs: o.pollIntervalMs };
  }
  return { kind: 'self-signed', dnsNames: o.dnsNames };
}

/** The DNS names of a Service as clients in the cluster dial it. */
export function serviceDnsNames(name: string, namespace: string, clusterDomain = 'cluster.local'): string[] {
  return [name, `${name}.${namespace}`, `${name}.${namespace}.svc`, `${name}.${namespace}.svc.${clusterDomain}`];
}

export interface CertificatePair {
  readonly cert: Buffer;
  readonly key: Buffer;
}

/** Throws when `pair` cannot be served (not PEM, key not the certificate's, ...). */
function checkPair(pair: CertificatePair): void {
  createSecureContext({ cert: pair.cert, key: pair.key });
}

/** The certificate a TLS server serves now; listeners hear of each new one. */
export class ServedCertificate {
  private listeners: ((pair: CertificatePair) => void)[] = [];

  private constructor(
    private pair: CertificatePair,
    private readonly stop: () => void = () => {},
  ) {}

  /**
   * Reads the files (or makes the self-signed certificate) now. Throws an Error naming the file
   * and the problem when the files cannot be read or are not a certificate and its key.
   */
  static start(tls: Exclude<ServerTls, { kind: 'plaintext' }>, logger: Pick<Logger, 'warn' | 'info'>): ServedCertificate {
    if (tls.kind === 'self-signed') {
      return new ServedCertificate(selfSignedCertificate({ commonName: tls.dnsNames[0] ?? 'mcip-router', dnsNames: tls.dnsNames }));
    }
    const files = new CredentialFiles({ pollIntervalMs: 0 });
    const read = (): CertificatePair => ({ cert: files.read(tls.certFile), key: files.read(tls.keyFile) });
    let pair: CertificatePair;
    try {
      pair = read();
      checkPair(pair);
    } catch (err) {
      files.close();
      throw new Error(`TLS certificate ${tls.certFile} with key ${tls.keyFile}: ${(err as Error).message}`);
    }
    let timer: NodeJS.Timeout | undefined;
    const served = new ServedCertificate(pair, () => {
      clearInterval(timer);
      files.close();
    });
    let seen = files.generation;
    timer = setInterval(() => {
      void files.poll().then(() => {
        if (files.generation === seen) return;
        seen = files.generation;
        const next = read();
        try {
          checkPair(next);
        } catch (err) {
          // Mid-rotation (one file written, not the other yet) or a bad file: keep the last good pair.
          logger.warn({ certFile: tls.certFile, keyFile: tls.keyFile, err: (err as Error).message }, 'TLS certificate files changed but are not usable: still serving the previous certificate');
          return;
        }
        logger.info({ certFile: tls.certFile }, 'TLS certificate re-read: new connections get it');
        served.update(next);
      });
    }, tls.pollIntervalMs);
    timer.unref();
    return served;
  }

  current(): CertificatePair {
    return this.pair;
  }

  onChange(listener: (pair: CertificatePair) => void): void {
    this.listeners.push(listener);
  }

  close(): void {
    this.listeners = [];
    this.stop();
  }

  private update(pair: CertificatePair): void {
    this.pair = pair;
    for (const l of this.listeners) l(pair);
  }
}
