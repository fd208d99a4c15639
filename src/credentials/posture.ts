/**
 * Pure: what each member's settings mean for security, for the start-up log and
 * /debug/sources. Weakened settings (unverified certificates, a token over plain
 * http, a token the member has but cannot send) become warnings naming the member
 * and the field.
 */
import type { ClusterConfig, RouterConfig } from '../config/schema.js';

export interface MemberSecurity {
  /** "plaintext", "verified (system CAs)", "verified (caFile)", "NOT VERIFIED (insecureSkipVerify)", plus client certificate / serverName. */
  readonly eppTls: string;
  /** "disabled", "http", or the https verification as for eppTls. */
  readonly metricsTransport: string;
  /** "none", "bearerTokenFile", "kubernetes credentials", and whether it is withheld or sent in the clear. */
  readonly metricsToken: string;
}

export interface SecurityWarning {
  readonly cluster: string;
  readonly field: string;
  readonly message: string;
}

export interface SecurityPosture {
  readonly members: Readonly<Record<string, MemberSecurity>>;
  readonly warnings: readonly SecurityWarning[];
}

interface TlsLike {
  readonly caFile?: string | undefined;
  readonly certFile?: string | undefined;
  readonly insecureSkipVerify: boolean;
  readonly serverName?: string | undefined;
}

function describeTls(t: TlsLike): string {
  const verify = t.caFile !== undefined ? 'verified (caFile)' : t.insecureSkipVerify ? 'NOT VERIFIED (insecureSkipVerify)' : 'verified (system CAs)';
  return [verify, t.certFile !== undefined ? 'client certificate' : '', t.serverName !== undefined ? `serverName ${t.serverName}` : ''].filter(Boolean).join(', ');
}

const unverified = (t: TlsLike): boolean => t.insecureSkipVerify && t.caFile === undefined;

function member(c: ClusterConfig, i: number, warnings: SecurityWarning[]): MemberSecurity {
  const at = `clusters[${i}].epp`;
  const warn = (field: string, message: string): void => {
    warnings.push({ cluster: c.name, field: `${at}.${field}`, message });
  };
  const tls = c.epp.tls;
  if (tls.enabled && unverified(tls)) {
    warn('tls.insecureSkipVerify', 'the certificates of this member\'s EPPs are not verified: anyone on the path can impersonate an EPP and read the requests');
  }
  const m = c.epp.metrics;
  const token = m.bearerTokenFile !== undefined ? 'bearerTokenFile' : c.kubernetes !== undefined ? 'kubernetes credentials' : 'none';
  let metricsToken = token;
  if (m.enabled && m.scheme === 'https' && unverified(m.tls)) {
    warn('metrics.tls.insecureSkipVerify', 'the certificates of this member\'s metrics endpoints are not verified');
  }
  if (m.enabled && token !== 'none' && m.scheme === 'http') {
    if (m.allowTokenOverPlainHttp) {
      metricsToken = `${token}, sent over plain http`;
      warn('metrics.allowTokenOverPlainHttp', `the scrape token (${token}) is sent over plain http`);
    } else {
      metricsToken = `${token}, withheld over plain http`;
      warn(
        'metrics.scheme',
        `scrapes use plain http, so the member's ${token} are not sent (an EPP that protects /metrics answers 401): set metrics.scheme: https, or metrics.allowTokenOverPlainHttp: true`,
      );
    }
  }
  return {
    eppTls: tls.enabled ? describeTls(tls) : 'plaintext',
    metricsTransport: !m.enabled ? 'disabled' : m.scheme === 'http' ? 'http' : `https, ${describeTls(m.tls)}`,
    metricsToken: m.enabled ? metricsToken : 'none',
  };
}

export function securityPosture(config: Pick<RouterConfig, 'clusters'>): SecurityPosture {
  const warnings: SecurityWarning[] = [];
  const members: Record<string, MemberSecurity> = {};
  config.clusters.forEach((c, i) => {
    members[c.name] = member(c, i, warnings);
  });
  return { members, warnings };
}
