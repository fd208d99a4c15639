/**
 * What is running: the package version, the source revision the image was built from
 * (MCIP_ROUTER_REVISION, set by the Dockerfile's REVISION build argument) and the Node.js
 * version. Shown by --version, /debug/build, the startup log and mcip_build_info.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface BuildInfo {
  readonly version: string;
  readonly revision: string;
  readonly node: string;
}

let cached: BuildInfo | undefined;

export function buildInfo(env: Readonly<Record<string, string | undefined>> = process.env): BuildInfo {
  if (env === process.env && cached !== undefined) return cached;
  const revision = env.MCIP_ROUTER_REVISION?.trim();
  const info = { version: packageVersion(), revision: revision === undefined || revision === '' ? 'unknown' : revision, node: process.version };
  if (env === process.env) cached = info;
  return info;
}

/** The --version line: `mcip-router 0.1.0 (revision abc1234, node v26.0.0)`. */
export function versionLine(info: BuildInfo = buildInfo()): string {
  return `mcip-router ${info.version} (revision ${info.revision}, node ${info.node})`;
}

/** The package version, read from the package.json next to the sources or the build. */
export function packageVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'mcip-router' && pkg.version) return pkg.version;
    }
    dir = dirname(dir);
  }
  return 'unknown';
}
