// Executables for a script under test, in a fresh directory to put first on PATH: stand-ins
// for tools the machine lacks or must not call (docker, kubectl), and a `sleep` that returns at
// once so the script's polling costs no wall time.
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Writes each `name -> shell script` as an executable, plus a no-op `sleep`; returns the directory. */
export function fakeBin(scripts: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'mcip-bin-'));
  for (const [name, text] of Object.entries({ sleep: '#!/bin/sh\nexit 0\n', ...scripts })) {
    writeFileSync(join(dir, name), text);
    chmodSync(join(dir, name), 0o755);
  }
  return dir;
}
