/**
 * The files the demo writes for each gateway shape, checked by the router itself: the
 * config passes the router's schema (loadConfig) and the built CLI's `--check` exits 0
 * with the routing table the shape needs. In the byo shape that is one multi-cluster
 * InferencePool on the layout's picker port, spanning cluster-a's pool and the import
 * of cluster-b's, answered directly, over TLS (the self-signed default); in the envoy
 * shape, HTTPRoute llm-route and no picker port.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MULTI_CLUSTER_POOL, PICKER_NAMESPACE, PICKER_SERVICE } from '../../demo/gateway-shape.js';
import { layout } from '../../demo/layout.js';
import { ROOT, ROUTER_MAIN, writeRouterConfig } from '../../demo/router-process.js';
import { loadConfig } from '../../src/config/load.js';
import { ensureBuild } from './demo-run.js';

const dirs: string[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'mcip-demo-shape-'));
  dirs.push(d);
  return d;
}

/** `node dist/src/main.js --config FILE --check`, as an operator runs it. */
function check(configFile: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [ROUTER_MAIN, '--config', configFile, '--check'], { cwd: ROOT }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 70) : 0, stdout, stderr }),
    );
  });
}

beforeAll(ensureBuild, 120_000);

afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('the demo in the bring-your-own-gateway shape', () => {
  const l = layout(18080, 3, 'byo');

  it('writes a router config the router accepts: one picker port on loopback, TLS on with the self-signed default, no Gateway to serve', async () => {
    const files = await writeRouterConfig(tempDir(), l);
    const config = await loadConfig(files.configFile);
    expect(config.endpointPicker).toMatchObject({ namespace: PICKER_NAMESPACE, serviceName: PICKER_SERVICE, address: '127.0.0.1', ports: [18083] });
    expect(config.endpointPicker.tls).toMatchObject({ plaintext: false });
    expect(config.endpointPicker.tls.certFile).toBeUndefined();
    expect(config.gateways).toEqual([]);
    // The router's own ext_proc listener stays where the layout has it (and does not collide with the picker port).
    expect(config.listen.extProc).toBe('127.0.0.1:18081');
  });

  it('writes a multi-cluster InferencePool whose endpointPickerRef names the router\'s Service on the picker port, beside the config', async () => {
    const files = await writeRouterConfig(tempDir(), l);
    expect(files.multiClusterPool).toBe(join(files.configFile, '..', 'multi-cluster-pool.yaml'));
    const pool = parse(readFileSync(files.multiClusterPool!, 'utf8')) as {
      kind: string;
      metadata: { name: string; namespace: string; annotations: Record<string, string> };
      spec: { endpointPickerRef: { name: string; port: { number: number } } };
    };
    expect(pool.kind).toBe('InferencePool');
    expect(pool.metadata).toMatchObject({ name: MULTI_CLUSTER_POOL, namespace: PICKER_NAMESPACE });
    expect(pool.metadata.annotations).toEqual({
      'mcip-router.dev/backends': 'InferencePool/llm-pool=1, InferencePoolImport/llm-pool=1',
      'mcip-router.dev/answer': 'direct',
    });
    expect(pool.spec.endpointPickerRef).toEqual({ name: PICKER_SERVICE, port: { number: 18083 } });
    // The examples stay as they are: the pool lives only in the demo's directory.
    const config = await loadConfig(files.configFile);
    expect(config.clusters[0]!.manifests?.paths).toEqual([join(ROOT, 'examples/cluster-a/inferencepool.yaml'), files.multiClusterPool]);
  });

  it('passes `mcip-router --check` with exit 0: the pool on the picker port, spanning the local pool and the import, no HTTPRoute', async () => {
    const files = await writeRouterConfig(tempDir(), l);
    const r = await check(files.configFile);
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    const line = r.stdout.split('\n').find((s) => s.includes(`InferencePool/${PICKER_NAMESPACE}/${MULTI_CLUSTER_POOL} `));
    expect(line, r.stdout).toMatch(/picker port 18083 +answer direct/);
    expect(r.stdout).toContain('cluster-a/default/llm-pool');
    expect(r.stdout).toContain('cluster-b/default/llm-pool');
    expect(r.stdout).not.toContain('llm-route');
  }, 30_000);
});

describe('the demo in the own-Envoy shape (the default)', () => {
  it('writes the HTTPRoute config with no picker port and no pool of its own, which passes --check', async () => {
    const files = await writeRouterConfig(tempDir(), layout(18080, 3));
    expect(files.multiClusterPool).toBeUndefined();
    const config = await loadConfig(files.configFile);
    expect(config.endpointPicker.ports).toEqual([]);
    expect(config.gateways).toEqual([{ namespace: 'default', name: 'inference-gateway' }]);
    const r = await check(files.configFile);
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(r.stdout).toContain('llm-route');
  }, 30_000);
});
