/**
 * The poll fallback alone: fs.watch is made to fail, as it can on some network
 * and overlay filesystems, and changes must still apply within 2 s.
 */
import { mkdir, rename, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ManifestSource } from '../../src/sources/manifest-source.js';
import { names, pool, Recorder, tempDir } from './manifest-fixtures.js';

vi.mock('node:fs', async (importOriginal) => {
  const fs = await importOriginal<typeof import('node:fs')>();
  return {
    ...fs,
    watch: () => {
      throw new Error('fs.watch unavailable in this test');
    },
  };
});

let dir: string;
let cleanup: () => Promise<void>;
let source: ManifestSource | undefined;
beforeEach(async () => {
  ({ dir, cleanup } = await tempDir());
});
afterEach(async () => {
  await source?.stop();
  await cleanup();
});

describe('ManifestSource poll fallback', () => {
  it('applies an edit and a ConfigMap swap within 2 s without fs.watch', async () => {
    const mount = join(dir, 'cm');
    await mkdir(join(mount, '..t1'), { recursive: true });
    await writeFile(join(mount, '..t1', 'pools.yaml'), pool('p1'));
    await symlink('..t1', join(mount, '..data'));
    await symlink('..data/pools.yaml', join(mount, 'pools.yaml'));
    const plain = join(dir, 'plain.yaml');
    await writeFile(plain, pool('q1'));

    source = new ManifestSource({ cluster: 'c', paths: [mount, plain], debounceMs: 200, pollIntervalMs: 1000 });
    const rec = new Recorder();
    await source.start(rec);
    expect(names(rec.last)).toEqual(['InferencePool default/p1', 'InferencePool default/q1']);

    await writeFile(plain, pool('q2'));
    expect(await rec.until((r) => r.states.length === 2, 2000)).toBeLessThan(2000);
    expect(names(rec.last)).toEqual(['InferencePool default/p1', 'InferencePool default/q2']);

    await mkdir(join(mount, '..t2'));
    await writeFile(join(mount, '..t2', 'pools.yaml'), pool('p2'));
    await symlink('..t2', join(mount, '..data_tmp'));
    await rename(join(mount, '..data_tmp'), join(mount, '..data'));
    expect(await rec.until((r) => r.states.length === 3, 2000)).toBeLessThan(2000);
    expect(names(rec.last)).toEqual(['InferencePool default/p2', 'InferencePool default/q2']);
  });
});
