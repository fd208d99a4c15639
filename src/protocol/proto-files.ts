/**
 * Finds the repository's `protos/` directory from this module's own location,
 * so the same code works from `src/` (vitest, tsx) and from `dist/src/` (node
 * after `tsc`): walk up from this file until a directory holds our ext_proc proto.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Path of our ext_proc proto relative to the protos directory; its presence marks the directory. */
export const EXT_PROC_PROTO = 'envoy/service/ext_proc/v3/external_processor.proto';
/** Path of our gRPC health proto relative to the protos directory. */
export const HEALTH_PROTO = 'grpc/health/v1/health.proto';

let cached: string | undefined;

/**
 * Returns the first `protos` directory found walking up from `startDir` that
 * contains {@link EXT_PROC_PROTO}. Throws when none is found.
 */
export function findProtosDir(startDir: string): string {
  let dir = startDir;
  for (;;) {
    const candidate = join(dir, 'protos');
    if (existsSync(join(candidate, EXT_PROC_PROTO))) return candidate;
    const parent = dirname(dir);
    if (parent === dir) {
      throw new Error(`mcip-router: no protos/${EXT_PROC_PROTO} found above ${startDir}`);
    }
    dir = parent;
  }
}

/** The protos directory for this installation (looked up once). */
export function protosDir(): string {
  cached ??= findProtosDir(dirname(fileURLToPath(import.meta.url)));
  return cached;
}

/** Absolute path of a file under the protos directory, e.g. `protoPath(HEALTH_PROTO)`. */
export function protoPath(relative: string): string {
  return join(protosDir(), relative);
}
