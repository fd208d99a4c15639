/**
 * examples/two-clusters/kubeconfig-secrets.sh with a `kubectl` on PATH that plays both API
 * servers as they behave: a service-account token Secret exists at once but Kubernetes fills in
 * its token and ca.crt a moment later. The script waits for them, builds the kubeconfigs (the API
 * server's address and CA as your kubeconfig has them) and the metrics token Secret from the
 * values, and fails naming the Secret when one stays empty.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { REPO } from '../charts/render-chart.js';
import { fakeBin } from '../helpers/fake-bin.js';

/**
 * Reads of cluster-b's token Secrets answer empty data until the STATE/reads counter passes
 * FILLED_AFTER; `create secret generic --dry-run=client -o yaml` prints the Secret as kubectl
 * does (base64 data); `apply -f -` appends what it reads to STATE/applied-<context>.
 */
const FAKE_KUBECTL = `#!/bin/sh
ctx=''; ns=''
while [ $# -gt 0 ]; do
  case "$1" in
    --context) ctx=$2; shift 2 ;;
    -n) ns=$2; shift 2 ;;
    *) break ;;
  esac
done
case "$1 $2" in
  "config view")
    case "$*" in
      *contexts*) echo "gke_b" ;;
      *certificate-authority-data*) [ "$*" != "\${*#*--flatten}" ] && printf '%s' "\${KUBECONFIG_CA:-}" ;;
      *clusters*) echo "https://10.20.0.2:443" ;;
    esac ;;
  "get secret")
    n=$(cat "$STATE/reads" 2>/dev/null || echo 0); echo $((n + 1)) > "$STATE/reads"
    [ "$ctx" = cluster-b ] && [ "$ns" = mcip-system ] || exit 1
    [ "$n" -ge "$FILLED_AFTER" ] || exit 0
    case "$*" in
      *ca*crt*) printf '%s' "Q0EtUEVN" ;;
      *) printf '%s' "$(printf 'token-of-%s' "$3" | base64)" ;;
    esac ;;
  "create secret")
    name=$4; spec=\${5#--from-file=}; key=\${spec%%=*}; file=\${spec#*=}
    printf 'apiVersion: v1\\nkind: Secret\\nmetadata:\\n  name: %s\\n  namespace: %s\\ndata:\\n  %s: %s\\n' "$name" "$ns" "$key" "$(base64 -w0 < "$file")" ;;
  "apply -f")
    { cat; echo '---'; } >> "$STATE/applied-$ctx" ;;
  *) echo "fake kubectl: unexpected: $*" >&2; exit 2 ;;
esac
`;

let bin: string;
beforeAll(() => {
  bin = fakeBin({ kubectl: FAKE_KUBECTL });
});

function run(env: Record<string, string>) {
  const state = mkdtempSync(join(tmpdir(), 'mcip-kubectl-state-'));
  const r = spawnSync('sh', ['examples/two-clusters/kubeconfig-secrets.sh'], {
    cwd: REPO,
    encoding: 'utf8',
    env: { PATH: `${bin}:${process.env.PATH}`, STATE: state, ...env },
  });
  let applied: { metadata: { name: string; namespace: string }; data: Record<string, string> }[] = [];
  try {
    applied = parseAllDocuments(readFileSync(join(state, 'applied-cluster-a'), 'utf8'))
      .map((d) => d.toJSON() as (typeof applied)[number] | null)
      .filter((d) => d !== null);
  } catch {
    // nothing applied
  }
  return { ...r, applied, reads: Number(readFileSync(join(state, 'reads'), 'utf8')) };
}

const decode = (b64: string) => Buffer.from(b64, 'base64').toString('utf8');

describe('kubeconfig-secrets.sh', () => {
  it('waits until Kubernetes has filled in each token Secret, then stores the kubeconfigs and the metrics token in cluster-a', () => {
    const r = run({ FILLED_AFTER: '5', KUBECONFIG_CA: 'S1VCRUNPTkZJRy1DQQ==' });
    expect(r.status, r.stderr).toBe(0);
    expect(r.reads).toBeGreaterThan(5);
    expect(r.applied.map((s) => s.metadata.name)).toEqual(['cluster-b-reader', 'cluster-b-export', 'cluster-b-metrics-token']);
    const reader = parse(decode(r.applied[0]!.data.kubeconfig!)) as { clusters: { cluster: Record<string, string> }[]; users: { user: { token: string } }[] };
    // The CA your kubectl verifies that address with, not the token Secret's ca.crt (the cluster's own CA).
    expect(reader.clusters[0]!.cluster).toEqual({ server: 'https://10.20.0.2:443', 'certificate-authority-data': 'S1VCRUNPTkZJRy1DQQ==' });
    expect(reader.users[0]!.user.token).toBe('token-of-mcip-router-reader-token');
    expect(decode(r.applied[2]!.data.token!)).toBe('token-of-mcip-metrics-reader-token');
  });

  it('SECRETS_NAMESPACE: stores the same Secrets in that namespace of cluster-a, still reading cluster-b\'s mcip-system', () => {
    const byDefault = run({ FILLED_AFTER: '0' });
    expect(byDefault.applied.map((s) => s.metadata.namespace)).toEqual(['mcip-system', 'mcip-system', 'mcip-system']);
    const r = run({ FILLED_AFTER: '0', SECRETS_NAMESPACE: 'inference' });
    expect(r.status, r.stderr).toBe(0);
    expect(r.applied.map((s) => [s.metadata.name, s.metadata.namespace])).toEqual([
      ['cluster-b-reader', 'inference'],
      ['cluster-b-export', 'inference'],
      ['cluster-b-metrics-token', 'inference'],
    ]);
  });

  it('an API server your kubeconfig verifies with the system CAs (no certificate-authority-data): the kubeconfigs name no CA either', () => {
    const r = run({ FILLED_AFTER: '0' });
    expect(r.status, r.stderr).toBe(0);
    for (const secret of r.applied.slice(0, 2)) {
      const kc = parse(decode(secret.data.kubeconfig!)) as { clusters: { cluster: Record<string, string> }[] };
      expect(kc.clusters[0]!.cluster).toEqual({ server: 'https://10.20.0.2:443' });
    }
  });

  it('a token Secret that stays empty: fails after TOKEN_WAIT_SECONDS naming it, and stores no kubeconfig with an empty token', () => {
    const r = run({ FILLED_AFTER: '100000', TOKEN_WAIT_SECONDS: '3' });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('Secret mcip-system/mcip-router-reader-token in cluster-b has no token after 3s');
    expect(r.applied).toEqual([]);
  });

  it('reads exactly the token Secrets deploy/rbac creates in cluster-b, and stores the Secrets the guide\'s Helm values name', () => {
    const script = readFileSync(join(REPO, 'examples/two-clusters/kubeconfig-secrets.sh'), 'utf8');
    const read = [...script.matchAll(/^(?:make_secret|copy_token) (\S+) (\S+)$/gm)].map((m) => [m[1]!, m[2]!] as const);
    const tokens = ['remote.yaml', 'export-member.yaml', 'metrics-reader.yaml'].flatMap((f) =>
      parseAllDocuments(readFileSync(join(REPO, 'deploy/rbac', f), 'utf8'))
        .map((d) => d.toJSON() as { kind: string; type?: string; metadata: { name: string; namespace?: string } })
        .filter((o) => o.kind === 'Secret' && o.type === 'kubernetes.io/service-account-token' && o.metadata.namespace === 'mcip-system')
        .map((o) => o.metadata.name),
    );
    expect(read.map(([t]) => t).sort()).toEqual(tokens.sort());
    const values = parse(readFileSync(join(REPO, 'examples/two-clusters/helm/cluster-a-values.yaml'), 'utf8')) as {
      remoteClusters: { kubeconfigSecret: { name: string }; exportKubeconfigSecret: { name: string }; credentials: { metricsToken: { secretName: string; key: string } } }[];
    };
    const b = values.remoteClusters[0]!;
    expect(read.map(([, s]) => s)).toEqual([b.kubeconfigSecret.name, b.exportKubeconfigSecret.name, b.credentials.metricsToken.secretName]);
    expect(b.credentials.metricsToken.key).toBe('token');
  });
});
