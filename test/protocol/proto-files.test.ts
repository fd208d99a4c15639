import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { EXT_PROC_PROTO, HEALTH_PROTO, findProtosDir, protoPath, protosDir } from '../../src/protocol/proto-files.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

describe('proto-files', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'mcip-protos-'));
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('finds the repository protos/ from the source tree', () => {
    expect(protosDir()).toBe(join(repoRoot, 'protos'));
    expect(protoPath(HEALTH_PROTO)).toBe(join(repoRoot, 'protos', HEALTH_PROTO));
  });

  it('walks up from a compiled location (dist/src/protocol) to the protos beside dist', () => {
    mkdirSync(join(tmp, 'protos', dirname(EXT_PROC_PROTO)), { recursive: true });
    writeFileSync(join(tmp, 'protos', EXT_PROC_PROTO), 'syntax = "proto3";\n');
    const compiled = join(tmp, 'dist', 'src', 'protocol');
    mkdirSync(compiled, { recursive: true });
    expect(findProtosDir(compiled)).toBe(join(tmp, 'protos'));
  });

  it('skips a protos/ directory that lacks our ext_proc proto', () => {
    const outer = join(tmp, 'outer');
    mkdirSync(join(outer, 'inner', 'protos', 'other'), { recursive: true });
    mkdirSync(join(outer, 'protos', dirname(EXT_PROC_PROTO)), { recursive: true });
    writeFileSync(join(outer, 'protos', EXT_PROC_PROTO), '');
    expect(findProtosDir(join(outer, 'inner'))).toBe(join(outer, 'protos'));
  });

  it('throws when no protos/ is found up to the filesystem root', () => {
    const lonely = mkdtempSync(join(tmpdir(), 'mcip-noprotos-'));
    try {
      expect(() => findProtosDir(lonely)).toThrow(/no protos\//);
    } finally {
      rmSync(lonely, { recursive: true, force: true });
    }
  });
});
