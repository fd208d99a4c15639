/**
 * Recognising an EPP certificate the router does not trust, and what to do about it. A stock
 * GIE / llm-d EPP serves a certificate it generates itself at start: no CA signs it, so the
 * default verification (system CAs) refuses it until the member trusts it one way or another.
 * One it is started with (--cert-path) is read at start too, so it expires in the EPP's hands
 * unless the EPP is restarted after each renewal.
 */

/** Node's messages for a peer certificate that fails verification (issuer, validity or name). */
const UNTRUSTED = /self[- ]signed certificate|unable to (?:verify|get (?:local )?issuer)|certificate has expired|certificate is not yet valid|does not match certificate's altnames|ERR_TLS_CERT_ALTNAME_INVALID|CERT_(?:UNTRUSTED|REJECTED|SIGNATURE_FAILURE)/i;

/** True when a connection error says the server's certificate was not verified. */
export function untrustedCertificate(message: string | undefined): boolean {
  return message !== undefined && UNTRUSTED.test(message);
}

/** Node's messages for a certificate outside its validity period: trusted, but expired (or not yet valid). */
const OUT_OF_DATE = /certificate has expired|certificate is not yet valid|CERT_HAS_EXPIRED|CERT_NOT_YET_VALID/i;

/**
 * What to do about a member's EPP certificate the router refused (`message`: the transport's
 * error, for logs). Out of its validity period: the EPP kept serving a certificate past its
 * renewal (a stock EPP reads it only at start), which no trust setting fixes. Otherwise: the
 * two ways to trust the member's EPPs, named by their config fields.
 */
export function eppTrustHint(cluster: string, message?: string): string {
  if (message !== undefined && OUT_OF_DATE.test(message)) {
    return (
      `the EPP serves a certificate outside its validity period (expired, or not yet valid: compare the clocks): an EPP that reads its certificate ` +
      `only at start keeps serving the old one after it is renewed (e.g. by cert-manager), so restart it (kubectl rollout restart on its Deployment) ` +
      `or have it reload its certificate (GIE's --enable-cert-reload)`
    );
  }
  return (
    `trust the CA that signs the EPP's certificate (cluster ${cluster}: epp.tls.caFile; in the chart, credentials.eppTls, e.g. the Secret of a ` +
    `cert-manager Certificate the EPP serves), or accept its self-generated certificate unverified with epp.tls.insecureSkipVerify: true`
  );
}
