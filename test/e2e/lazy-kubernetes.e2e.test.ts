/**
 * Kubernetes support is loaded only when a member cluster reads a Kubernetes
 * API: @kubernetes/client-node costs ~90 MB of RSS and ~1 s of start-up, which
 * a router fed by manifest files must not pay (issue 6: < 150 MB with 1,000
 * streams). A resolve hook (fixtures/record-imports.mjs) records every module
 * the built router's ESM loader resolves; @kubernetes/client-node is ESM-only,
 * so it cannot be loaded without passing through that hook.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { request } from 'undici';
import { parse, stringify } from 'yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import { gatewayYaml, poolYaml, routeYaml, writeClusterSet } from './clusterset.js';
import { ensureBuilt, MAIN, ROOT, runCli, startCli } from './cli-process.js';

const HOOK = join(ROOT, 'test/e2e/fixtures/record-imports.mjs');
const KUBERNETES_CLIENT = '/node_modules/@kubernetes/client-node/';
/** Idle RSS of this manifest-only router: ~107 MiB under the hook (~95 without); with @kubernetes/client-node loaded, ~178 (~159). */
const IDLE_RSS_BOUND_MIB = 130;

beforeAll(() => ensureBuilt(), 120_000);

/** The first few recorded URLs from Kubernetes support (the package, our sources/kubernetes and controller/). */
function kubernetesUrls(urls: readonly string[]): string[] {
  return urls.filter((u) => u.includes(KUBERNETES_CLIENT) || u.includes('/dist/src/sources/kubernetes/') || u.includes('/dist/src/controller/')).slice(0, 10);
}

function recorder(): { file: string; env: Record<string, string>; nodeArgs: string[]; urls(): string[] } {
  const file = join(mkdtempSync(join(tmpdir(), 'mcip-imports-')), 'imports.txt');
  writeFileSync(file, '');
  return {
    file,
    env: { MCIP_RECORD_IMPORTS: file },
    nodeArgs: ['--import', HOOK],
    urls: () => readFileSync(file, 'utf8').split('\n').filter(Boolean),
  };
}

function manifestClusterSet() {
  return writeClusterSet([
    {
      name: 'cluster-a',
      files: { 'gw.yaml': gatewayYaml(), 'pool.yaml': poolYaml('p'), 'route.yaml': routeYaml('r', 'a.example', [{ kind: 'InferencePool', name: 'p' }]) },
      epps: { 'p-epp': '127.0.0.1:1' },
    },
    { name: 'cluster-b', files: { 'pool.yaml': poolYaml('p', { exported: true }) }, epps: { 'p-epp': '127.0.0.1:1' } },
  ]);
}

describe('Kubernetes support loads lazily', () => {
  it('importing the CLI entry point (router, --check, sources) does not load @kubernetes/client-node', async () => {
    const rec = recorder();
    // The entry point loads the router and --check when it runs them: import those modules too.
    const modules = [MAIN, join(ROOT, 'dist/src/runtime/router.js'), join(ROOT, 'dist/src/cli/check.js')].map((m) => `file://${m}`);
    await promisify(execFile)(process.execPath, [...rec.nodeArgs, '--input-type=module', '-e', modules.map((m) => `await import(${JSON.stringify(m)});`).join(' ')], {
      cwd: ROOT,
      env: { ...process.env, ...rec.env },
    });
    const urls = rec.urls();
    for (const m of modules) expect(urls).toContain(m);
    expect(kubernetesUrls(urls)).toEqual([]);
  });

  it('a router whose clusters all use manifests serves without loading it, and its idle RSS stays far below the budget', async () => {
    const rec = recorder();
    const set = manifestClusterSet();
    const router = await startCli(['--config', set.configFile, '--log-level', 'info'], 20_000, { nodeArgs: rec.nodeArgs, env: rec.env });
    try {
      expect((await request(`http://${router.admin}/readyz`)).statusCode).toBe(200);
      // /debug/sources lists Kubernetes sources: answered without the module.
      const sources = await request(`http://${router.admin}/debug/sources`);
      expect(await sources.body.json()).toMatchObject({ kubernetes: {}, importController: { enabled: false } });
      const metrics = await (await request(`http://${router.admin}/metrics`)).body.text();
      const rssMiB = Number(/^process_resident_memory_bytes (\S+)/m.exec(metrics)?.[1]) / 1048576;
      expect(rssMiB).toBeGreaterThan(0);
      expect(rssMiB, `idle RSS ${rssMiB.toFixed(1)} MiB`).toBeLessThan(IDLE_RSS_BOUND_MIB);
      const urls = rec.urls();
      expect(urls).toContain(`file://${MAIN}`);
      expect(kubernetesUrls(urls)).toEqual([]);
      // Metrics scrapes and parent probes run on node:http: undici (its WebAssembly parser) is not loaded.
      expect(urls.filter((u) => u.includes('/node_modules/undici/'))).toEqual([]);
    } finally {
      router.child.kill('SIGKILL');
    }
  });

  it('a cluster with a kubernetes: source does load it (the hook sees lazy imports)', async () => {
    const rec = recorder();
    const set = manifestClusterSet();
    const config = parse(readFileSync(set.configFile, 'utf8')) as { clusters: Record<string, unknown>[] };
    const remote = config.clusters[1]!;
    delete remote.manifests;
    remote.kubernetes = { kubeconfig: '/nonexistent/kubeconfig' };
    const file = join(set.dir, 'with-kubernetes.yaml');
    writeFileSync(file, stringify(config));
    const run = await runCli(['--check', '--config', file], rec.env, 20_000, rec.nodeArgs);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('/nonexistent/kubeconfig');
    expect(rec.urls().some((u) => u.includes(KUBERNETES_CLIENT))).toBe(true);
  });
});
