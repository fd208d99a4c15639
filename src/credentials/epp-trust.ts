/**
 * Recognising an EPP certificate the router does not trust, and what to do about it. A stock
 * GIE / llm-d EPP serves a certificate it generates itself at start: no CA signs it, so the
 * default verification (system CAs) refuses it until the member trusts it one way or another.
 */

/** Node's messages for a peer certificate that fails verification (issuer, validity or name). */
const UNTRUSTED = /self[- ]signed certificate|unable to (?:verify|get (?:local )?issuer)|certificate has expired|certificate is not yet valid|does not match certificate's altnames|ERR_TLS_CERT_ALTNAME_INVALID|CERT_(?:UNTRUSTED|REJECTED|SIGNATURE_FAILURE)/i;

/** True when a connection error says the server's certificate was not verified. */
export function untrustedCertificate(message: string | undefined): boolean {
  return message !== undefined && UNTRUSTED.test(message);
}

/** The two ways to trust a member's EPPs, named by their config fields (for logs). */
export function eppTrustHint(cluster: string): string {
  return (
    `trust the CA that signs the EPP's certificate (cluster ${cluster}: epp.tls.caFile; in the chart, credentials.eppTls, e.g. the Secret of a ` +
    `cert-manager Certificate the EPP serves), or accept its self-generated certificate unverified with epp.tls.insecureSkipVerify: true`
  );
}
