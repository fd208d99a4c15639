/**
 * Change-to-serving through a running router (compiled, its own process): a
 * synthetic ClusterSet written as manifest files, one HTTPRoute edited in place
 * (write + rename, as editors and ConfigMap updates do), timed until the router
 * logs the new snapshot (it serves it from that moment). The manifest source
 * re-reads the changed cluster's files whole, so this includes reading, parsing
 * and decoding every local object, plus the snapshot build.
 */
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { KubeObject } from '../src/model/types.js';
import { procUsage, spawnRouter } from './lib/proc.js';
import { clusterName, routeObject, syntheticClusterSet } from './lib/synthetic.js';
import type { ReloadPoint } from './lib/types.js';
import { MAX_YAML_DOCUMENTS } from '../src/sources/yaml-shape.js';

const DEBOUNCE_MS = 0;

/** Multi-document YAML; each document in JSON (flow) style, which is valid YAML and quick to write. */
function docs(objects: readonly KubeObject[]): string {
  return objects.map((o) => JSON.stringify(o)).join('\n---\n') + '\n';
}

function writeAtomic(path: string, text: string): void {
  writeFileSync(`${path}.tmp`, text);
  renameSync(`${path}.tmp`, path);
}

export async function reloadPoint(routes: number, changes: number, nodeFlags: readonly string[] = []): Promise<ReloadPoint> {
  const set = syntheticClusterSet({ routes });
  const dir = mkdtempSync(join(tmpdir(), 'mcip-bench-reload-'));
  try {
    set.states.forEach((s, c) => {
      const name = clusterName(c);
      mkdirSync(join(dir, name));
      // route-0 lives in its own file: the edit rewrites that file only.
      const rest = s.objects.filter((o) => !(o.kind === 'HTTPRoute' && o.metadata.name === 'route-0'));
      // The router refuses a file of more than MAX_YAML_DOCUMENTS documents: split the set over files.
      for (let i = 0; i * MAX_YAML_DOCUMENTS < rest.length; i++) {
        writeFileSync(join(dir, name, `objects-${i}.yaml`), docs(rest.slice(i * MAX_YAML_DOCUMENTS, (i + 1) * MAX_YAML_DOCUMENTS)));
      }
      if (c === 0) writeFileSync(join(dir, name, 'route-0.yaml'), docs([routeObject(0)]));
    });
    const config = {
      clusterName: clusterName(0),
      mode: 'Endpoint',
      listen: { extProc: '127.0.0.1:0', admin: '127.0.0.1:0' },
      gateways: set.config.gateways,
      clusters: set.states.map((s) => ({
        name: s.cluster,
        manifests: { paths: [s.cluster] },
        // Every EPP resolves to an unroutable address; keep the probers quiet so they do not compete with the reload.
        epp: { tls: { enabled: false }, health: { intervalMs: 600_000 }, metrics: { enabled: false } },
      })),
      manifests: { debounceMs: DEBOUNCE_MS, pollIntervalMs: 1000 },
      log: { level: 'info' },
    };
    const configFile = join(dir, 'router.yaml');
    writeFileSync(configFile, stringify(config));
    const router = await spawnRouter(configFile, nodeFlags);
    try {
      const times: number[] = [];
      let version = 0;
      const off = router.onLog((e) => {
        if (e.msg === 'routing snapshot built' && typeof e.version === 'number') version = Math.max(version, e.version);
      });
      await new Promise((r) => setTimeout(r, 300));
      for (let k = 0; k < changes; k++) {
        const before = version;
        const seen = new Promise<number>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`router did not rebuild within 30 s (routes=${routes})`)), 30_000);
          const stop = router.onLog((e, at) => {
            if (e.msg === 'routing snapshot built' && typeof e.version === 'number' && e.version > before) {
              clearTimeout(timer);
              stop();
              resolve(at);
            }
          });
        });
        const t = performance.now();
        writeAtomic(join(dir, clusterName(0), 'route-0.yaml'), docs([routeObject(0, 30 + k)]));
        times.push((await seen) - t);
        await new Promise((r) => setTimeout(r, 150));
      }
      off();
      const sorted = [...times].sort((a, b) => a - b);
      return {
        routes,
        objects: set.counts.objects,
        startupMs: Math.round(router.startupMs),
        reloadMs: { median: Math.round(sorted[Math.floor((sorted.length - 1) / 2)]! * 10) / 10, max: Math.round(sorted.at(-1)! * 10) / 10 },
        debounceMs: DEBOUNCE_MS,
        routerRssMb: Math.round(procUsage(router.pid).rssMb * 10) / 10,
      };
    } finally {
      await router.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
