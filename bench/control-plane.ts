/**
 * The control-plane benchmark: snapshot build, change-to-serving and picker
 * cost in a child process (with --expose-gc), then manifest reloads through a
 * real router process.
 */
import type { BenchOptions } from './lib/args.js';
import { PROCS } from './lib/paths.js';
import { forkChild } from './lib/proc.js';
import { cpuProfile } from './lib/profile.js';
import type { BuildPoint, ControlPlaneResults, PickerPoint, ReloadPoint } from './lib/types.js';
import { reloadPoint } from './reload.js';

const log = (msg: string): void => void process.stderr.write(`[bench] ${msg}\n`);

export interface ControlPlaneRun {
  readonly results: ControlPlaneResults;
  readonly profiles: readonly { process: string; file: string }[];
}

export async function runControlPlane(o: BenchOptions, profileDir: string): Promise<ControlPlaneRun> {
  const build: BuildPoint[] = [];
  const profiles: { process: string; file: string }[] = [];
  const flags = ['--expose-gc'];
  if (o.profile) {
    const p = cpuProfile(profileDir, 'control-plane', 'control plane (buildSnapshot, SnapshotStore, match, picker; src under tsx)');
    flags.push(...p.flags);
    profiles.push(p.profile);
  }
  const child = await forkChild('control-plane', PROCS.controlPlane, [], flags);
  let picker: PickerPoint[];
  try {
    for (const routes of o.routeSizes) {
      const p = await child.rpc.call<BuildPoint>('build', {
        routes,
        repeats: o.quick ? 2 : 7,
        changes: o.quick ? 2 : 5,
        batchMs: o.quick ? 15 : 100,
      });
      build.push(p);
      log(
        `snapshot ${routes} routes (${p.pools} pools + ${p.imports} imports, ${p.objects} objects): build ${p.buildMs.median} ms ` +
          `(one change: ${p.incrementalBuildMs?.median ?? 'n/a'} ms), ` +
          `heap ${p.snapshotHeapMb} MiB, change->serving ${p.changeToServingMs.median} ms, match+pick ${p.matchNs} ns`,
      );
    }
    picker = await child.rpc.call<PickerPoint[]>('picker', { sizes: [2, 10, 100], batchMs: o.quick ? 15 : 100 });
    for (const p of picker) log(`picker ${p.candidates} candidates ${p.policy}: ${p.nsPerPick} ns`);
  } finally {
    await child.stop();
  }
  const reload: ReloadPoint[] = [];
  const largest = Math.max(...o.reloadSizes);
  for (const routes of o.reloadSizes) {
    let flags: string[] = [...o.routerNodeArgs];
    if (o.profile && routes === largest) {
      const name = `router-reload-${routes}`;
      const p = cpuProfile(profileDir, name, `${name} (start-up + ${o.quick ? 2 : 3} manifest reloads)`);
      flags = [...o.routerNodeArgs, ...p.flags];
      profiles.push(p.profile);
    }
    const p = await reloadPoint(routes, o.quick ? 2 : 3, flags);
    reload.push(p);
    log(`router reload ${routes} routes (${p.objects} objects): start ${p.startupMs} ms, reload ${p.reloadMs.median} ms, RSS ${p.routerRssMb} MiB`);
  }
  return { results: { build, picker, reload }, profiles };
}
