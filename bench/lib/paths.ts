/** Where things are: the repository root, the compiled router, the bench child entry points. */
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
/** The router as production runs it: compiled JS. */
export const ROUTER_MAIN = join(ROOT, 'dist/src/main.js');
export const BENCH_DIR = join(ROOT, 'bench');

/** Child entry points (TypeScript, run with `node --import tsx`). */
export const PROCS = {
  epp: join(BENCH_DIR, 'procs/fast-epp.ts'),
  floor: join(BENCH_DIR, 'procs/floor-proxy.ts'),
  h2floor: join(BENCH_DIR, 'procs/h2-floor-proxy.ts'),
  loadgen: join(BENCH_DIR, 'procs/loadgen.ts'),
  controlPlane: join(BENCH_DIR, 'procs/control-plane.ts'),
  fleetApiservers: join(BENCH_DIR, 'procs/fleet-apiservers.ts'),
} as const;
