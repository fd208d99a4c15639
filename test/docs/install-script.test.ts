/**
 * examples/two-clusters/install.sh run through with `kubectl` and `helm` stand-ins that record
 * each call and answer as the clusters would (a load-balancer address and the imports that
 * appear only after a few polls): the script goes through every step to the end, every
 * command that talks to a cluster names its context, helm installs the image IMAGE names,
 * and VERIFIED_EPP_TLS=1 swaps the unverified install for the certificate steps.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { REPO } from '../charts/render-chart.js';
import { fakeBin } from '../helpers/fake-bin.js';

/** Appends the call to LOG: the tool's name and each argument on a line, then an end marker (shell only: no process per call). */
const RECORD = `{ printf '%s\\n' "$(basename "$0")" "$@"; echo '<end>'; } >> "$LOG"`;

/** A counter per key in STATE: prints how many times it was bumped before. */
const COUNT = `count() { n=$(cat "$STATE/$1" 2>/dev/null || echo 0); echo $((n + 1)) > "$STATE/$1"; echo "$n"; }`;

const FAKE_KUBECTL = `#!/bin/sh
${RECORD}
${COUNT}
case "$*" in
  *"config view"*contexts*) echo cluster-b ;;
  *"config view"*clusters*) echo https://10.20.0.2:443 ;;
  *kustomize*) echo "kind: CustomResourceDefinition" ;;
  *"get service llm-pool-epp"*) [ "$(count lb)" -ge 2 ] && echo '{"ip":"10.20.0.9"}' ;;
  *"get infpimp llm-pool -o yaml"*) echo "status: {}" ;;
  *"get httproute llm-route"*) if [ "$(count route)" -ge 1 ]; then printf 'Accepted=True Accepted: attached to listener(s) http\\nResolvedRefs=True ResolvedRefs: every backendRef resolves\\n'; else printf 'Accepted=True Accepted: attached to listener(s) http\\nResolvedRefs=False BackendNotFound: backendRef InferencePoolImport inference/llm-pool has no usable pool\\n'; fi ;;
  *"get infpimp llm-pool"*) [ "$(count imp)" -ge 1 ] || exit 1 ;;
  *"get secret"*jsonpath*) printf '%s' "dmFsdWU=" ;;
  *"--dry-run=client -o yaml"*) echo "kind: Namespace" ;;
  *"auth can-i"*) echo yes ;;
esac
case "$*" in *" -f -"*) cat > /dev/null ;; esac
exit 0
`;

const FAKE_HELM = `#!/bin/sh
${RECORD}
exit 0
`;

let bin: string;
beforeAll(() => {
  bin = fakeBin({ kubectl: FAKE_KUBECTL, helm: FAKE_HELM });
});

function install(env: Record<string, string>): { status: number | null; stderr: string; calls: string[][] } {
  const state = mkdtempSync(join(tmpdir(), 'mcip-install-'));
  const log = join(state, 'calls.log');
  // A working directory of its own (the files the script writes land there) with the repository's examples.
  const cwd = mkdtempSync(join(tmpdir(), 'mcip-install-cwd-'));
  symlinkSync(join(REPO, 'examples'), join(cwd, 'examples'));
  const r = spawnSync('sh', ['examples/two-clusters/install.sh'], {
    cwd,
    encoding: 'utf8',
    env: { PATH: `${bin}:${process.env.PATH}`, STATE: state, LOG: log, ...env },
  });
  let calls: string[][] = [];
  try {
    calls = readFileSync(log, 'utf8').split('<end>\n').filter(Boolean).map((c) => c.replace(/\n$/, '').split('\n'));
  } catch {
    // no call made
  }
  return { status: r.status, stderr: r.stderr, calls };
}

const helmCalls = (calls: string[][]) => calls.filter((c) => c[0] === 'helm');

describe('install.sh', () => {
  it('refuses to start without IMAGE, before touching a cluster', () => {
    const r = install({});
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('set IMAGE to the mcip-router image you built and pushed');
    expect(r.calls).toEqual([]);
  });

  it('runs every step to the end: waits for the load-balancer address and the imports, installs the chart with IMAGE', () => {
    const r = install({ IMAGE: 'registry.example.com/team/mcip-router' });
    expect(r.status, r.stderr).toBe(0);
    const kubectl = r.calls.filter((c) => c[0] === 'kubectl').map((c) => c.slice(1));
    // Everything but kustomize (no cluster) and the kubeconfig reads names its cluster.
    const unnamed = kubectl.filter((c) => c[0] !== 'kustomize' && c[0] !== 'config' && !c.includes('--context'));
    expect(unnamed).toEqual([]);
    expect(kubectl.filter((c) => c.includes('llm-pool-epp') && c.includes('service'))).toHaveLength(3);
    expect(helmCalls(r.calls)).toEqual([
      ['helm', 'upgrade', '--install', 'mcip', 'charts/mcip-router', '-n', 'mcip-system', '--kube-context', 'cluster-a', '-f', 'examples/two-clusters/helm/cluster-a-values.yaml', '--set', 'image.repository=registry.example.com/team/mcip-router'],
    ]);
    // The router is installed after the credentials it mounts exist, and checked after.
    const at = (pred: (c: string[]) => boolean) => r.calls.findIndex(pred);
    expect(at((c) => c.includes('cluster-b-metrics-token'))).toBeLessThan(at((c) => c[0] === 'helm'));
    expect(at((c) => c.includes('deployment/mcip-mcip-router'))).toBeGreaterThan(at((c) => c[0] === 'helm'));
    // The Gateway API statuses: waited for, the route polled until it resolves (the import appears first).
    expect(kubectl.filter((c) => c.includes('wait')).map((c) => c.find((a) => a.includes('/')))).toEqual(['gatewayclass/mcip-envoy', 'gateway/inference-gateway']);
    expect(kubectl.filter((c) => c.includes('httproute'))).toHaveLength(3);
    expect(at((c) => c.includes('httproute'))).toBeGreaterThan(at((c) => c.includes('infpimp') && c.includes('yaml')));
    expect(r.calls.at(-1)).toEqual(['kubectl', '--context', 'cluster-b', '-n', 'inference', 'get', 'inferencepool', 'llm-pool', '-o', 'jsonpath={.status.parents}']);
    expect(r.calls.some((c) => c.includes('patch'))).toBe(false);
  });

  it('VERIFIED_EPP_TLS=1: issues and serves the EPP certificates, stores their CAs, installs with the verified values', () => {
    const r = install({ IMAGE: 'registry.example.com/team/mcip-router', VERIFIED_EPP_TLS: '1' });
    expect(r.status, r.stderr).toBe(0);
    expect(r.calls.filter((c) => c.includes('patch')).map((c) => c[2])).toEqual(['cluster-a', 'cluster-b']);
    expect(r.calls.filter((c) => c.includes('cluster-a-epp-ca') || c.includes('cluster-b-epp-ca'))).toHaveLength(2);
    const helm = helmCalls(r.calls);
    expect(helm).toHaveLength(1);
    expect(helm[0]!.filter((a, i) => helm[0]![i - 1] === '-f')).toEqual(['examples/two-clusters/helm/cluster-a-values.yaml', 'examples/two-clusters/helm/verified-epp-tls-values.yaml']);
  });
});
