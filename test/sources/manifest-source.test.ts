import { mkdir, rename, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManifestSource, ManifestSourceError } from '../../src/sources/manifest-source.js';
import { docs, names, pool, Recorder, service, sleep, tempDir } from './manifest-fixtures.js';
import { withinProcessMs } from '../helpers/work-time.js';

let dir: string;
let cleanup: () => Promise<void>;
const sources: ManifestSource[] = [];

beforeEach(async () => {
  ({ dir, cleanup } = await tempDir());
});
afterEach(async () => {
  await Promise.all(sources.splice(0).map((s) => s.stop()));
  await cleanup();
});

/** Production timings unless a test needs to be quicker. */
async function startSource(paths: string[], timing = { debounceMs: 200, pollIntervalMs: 1000 }) {
  const source = new ManifestSource({ cluster: 'cluster-a', paths, ...timing });
  sources.push(source);
  const rec = new Recorder();
  await source.start(rec);
  return { source, rec };
}

const FAST = { debounceMs: 50, pollIntervalMs: 200 };

describe('ManifestSource', () => {
  it('delivers the initial state before start() resolves', async () => {
    await writeFile(join(dir, 'pools.yaml'), docs(pool('p1'), service('p1-epp')));
    const { source, rec } = await startSource([dir]);
    expect(rec.states).toHaveLength(1);
    expect(rec.errors).toEqual([]);
    expect(names(rec.last)).toEqual(['InferencePool default/p1', 'Service default/p1-epp']);
    expect(source.state).toBe(rec.last);
  });

  it('applies an in-place edit within 2 s', async () => {
    const file = join(dir, 'pools.yaml');
    await writeFile(file, pool('p1'));
    const { rec } = await startSource([dir]);
    await writeFile(file, docs(pool('p1'), pool('p2')));
    await withinProcessMs(2000, 'the edit', () => rec.until((r) => r.states.length === 2, 15_000));
    expect(names(rec.last)).toEqual(['InferencePool default/p1', 'InferencePool default/p2']);
    expect(rec.last?.revision).not.toBe(rec.states[0]?.revision);
  });

  it('applies a change within 2 s even while events keep arriving', async () => {
    const file = join(dir, 'pools.yaml');
    await writeFile(file, pool('p1'));
    const { rec } = await startSource([dir]);
    let writing = true;
    const noise = (async () => {
      for (let i = 0; writing; i++) {
        await writeFile(join(dir, 'noise.txt'), String(i));
        await sleep(50);
      }
    })();
    try {
      await writeFile(file, pool('p2'));
      expect(await rec.until((r) => r.states.length === 2, 2000)).toBeLessThan(2000);
    } finally {
      writing = false;
      await noise;
    }
  });

  it('applies an atomic rename edit of a configured file', async () => {
    const file = join(dir, 'pools.yaml');
    await writeFile(file, pool('p1'));
    const { rec } = await startSource([file]);
    const tmp = join(dir, '.pools.yaml.tmp');
    await writeFile(tmp, pool('p1', { port: 8001 }));
    await rename(tmp, file);
    await rec.until((r) => r.states.length === 2, 2000);
    const p = rec.last?.objects[0];
    expect(p?.kind === 'InferencePool' && p.spec.targetPorts).toEqual([{ number: 8001 }]);
  });

  it('follows a ConfigMap-style ..data symlink swap', async () => {
    const mount = join(dir, 'cm');
    await mkdir(join(mount, '..2026_01_01_00_00_00.1'), { recursive: true });
    await writeFile(join(mount, '..2026_01_01_00_00_00.1', 'pools.yaml'), pool('p1'));
    await symlink('..2026_01_01_00_00_00.1', join(mount, '..data'));
    await symlink('..data/pools.yaml', join(mount, 'pools.yaml'));
    const { rec } = await startSource([mount]);
    expect(names(rec.last)).toEqual(['InferencePool default/p1']);

    // What the kubelet does: write a new timestamped dir, swap ..data atomically, remove the old dir.
    await mkdir(join(mount, '..2026_01_01_00_01_00.2'));
    await writeFile(join(mount, '..2026_01_01_00_01_00.2', 'pools.yaml'), docs(pool('p1'), pool('p3')));
    await symlink('..2026_01_01_00_01_00.2', join(mount, '..data_tmp'));
    await rename(join(mount, '..data_tmp'), join(mount, '..data'));
    await rm(join(mount, '..2026_01_01_00_00_00.1'), { recursive: true });

    await rec.until((r) => r.states.length === 2, 2000);
    expect(names(rec.last)).toEqual(['InferencePool default/p1', 'InferencePool default/p3']);
    expect(rec.errors).toEqual([]);
  });

  it('leaves out an invalid object, serves the rest of the edit, and takes the object back once fixed', async () => {
    const file = join(dir, 'pools.yaml');
    await writeFile(file, pool('p1'));
    const { rec } = await startSource([dir], FAST);

    await writeFile(file, docs(pool('p1'), pool('p2', { port: 0 }), service('p2-epp')));
    await rec.until((r) => r.states.length === 2);
    expect(names(rec.last)).toEqual(['InferencePool default/p1', 'Service default/p2-epp']);
    expect(rec.last?.errors).toEqual([
      {
        object: 'InferencePool default/p2',
        ref: { kind: 'InferencePool', namespace: 'default', name: 'p2' },
        path: 'spec.targetPorts[0].number',
        message: 'must be between 1 and 65535, got 0',
        origin: `${file}#1`,
      },
    ]);
    expect(rec.last?.rejected).toBeUndefined();
    expect(rec.errors).toEqual([]);

    await writeFile(file, docs(pool('p1'), pool('p2'), service('p2-epp')));
    await rec.until((r) => r.states.length === 3);
    expect(names(rec.last)).toEqual(['InferencePool default/p1', 'InferencePool default/p2', 'Service default/p2-epp']);
    expect(rec.last?.errors).toEqual([]);
  });

  it('rejects the change of a file that does not parse, keeps its last good version, and says so once restored byte for byte', async () => {
    const file = join(dir, 'pools.yaml');
    const good = pool('p1');
    await writeFile(file, good);
    const { source, rec } = await startSource([dir], FAST);
    await writeFile(file, `${pool('p1')}  bad: [\n`);
    await rec.until((r) => r.states.length === 2);
    const rejected = rec.last?.rejected;
    expect(rejected?.reason).toBe('parse');
    expect(rejected?.message).toContain(file);
    expect(rejected?.message).toMatch(/line \d+/);
    // The same objects as before (no rebuild needed), and the source's good state is still the first one.
    expect(rec.last?.objects).toBe(rec.states[0]?.objects);
    expect(source.state).toBe(rec.states[0]);

    await writeFile(file, good);
    await rec.until((r) => r.states.length === 3);
    expect(rec.last).toBe(rec.states[0]);
    expect(rec.last?.rejected).toBeUndefined();
    expect(rec.errors).toEqual([]);
  });

  it('rejects one unreadable file alone: the other files\' edits apply, the broken one keeps its last good version', async () => {
    await writeFile(join(dir, 'a.yaml'), pool('p1'));
    await writeFile(join(dir, 'b.yaml'), pool('p2'));
    const { rec } = await startSource([dir], FAST);
    // A document that is not a mapping cannot be named: the file's change is rejected.
    await writeFile(join(dir, 'a.yaml'), docs(pool('p9'), '- just\n- a list\n'));
    await writeFile(join(dir, 'b.yaml'), docs(pool('p2'), pool('p3')));
    await rec.until((r) => names(r.last).includes('InferencePool default/p3'));
    expect(names(rec.last)).toEqual(['InferencePool default/p1', 'InferencePool default/p2', 'InferencePool default/p3']);
    expect(rec.last?.rejected?.message).toMatch(/unreadable document in .*a\.yaml/);
    expect(rec.last?.rejected?.errors.map((e) => e.origin)).toEqual([`${join(dir, 'a.yaml')}#1`]);
  });

  it('reports a deleted configured file as a read error, keeps the state, and recovers when it returns', async () => {
    const file = join(dir, 'pools.yaml');
    await writeFile(file, pool('p1'));
    const { source, rec } = await startSource([file], FAST);
    await unlink(file);
    await rec.until((r) => r.errors.length === 1);
    expect(rec.errors[0]).toMatchObject({ reason: 'read', errors: [] });
    expect(rec.errors[0]?.message).toContain(`${file}: no such file or directory`);
    expect(source.state).toBe(rec.states[0]);

    await writeFile(file, pool('p2'));
    await rec.until((r) => r.states.length === 2);
    expect(names(rec.last)).toEqual(['InferencePool default/p2']);
  });

  it('treats a file deleted from a watched directory as removed objects', async () => {
    await writeFile(join(dir, 'a.yaml'), pool('p1'));
    await writeFile(join(dir, 'b.yaml'), pool('p2'));
    const { rec } = await startSource([dir], FAST);
    await unlink(join(dir, 'b.yaml'));
    await rec.until((r) => r.states.length === 2);
    expect(names(rec.last)).toEqual(['InferencePool default/p1']);
  });

  it('leaves out a duplicate introduced by a new file, keeping the first copy', async () => {
    await writeFile(join(dir, 'a.yaml'), pool('p1'));
    const { rec } = await startSource([dir], FAST);
    await mkdir(join(dir, 'more'));
    await writeFile(join(dir, 'more', 'b.yaml'), docs(pool('p1', { port: 9000 }), pool('p2')));
    await rec.until((r) => r.states.length === 2);
    expect(names(rec.last)).toEqual(['InferencePool default/p1', 'InferencePool default/p2']);
    expect(rec.last?.objects[0]).toBe(rec.states[0]?.objects[0]);
    expect(rec.last?.errors).toMatchObject([
      { reason: 'DuplicateObject', message: `duplicate object: also defined at ${join(dir, 'a.yaml')}#0; this copy is left out` },
    ]);
  });

  it('picks up a List kind added later', async () => {
    await writeFile(join(dir, 'a.yaml'), pool('p1'));
    const { rec } = await startSource([dir], FAST);
    await writeFile(join(dir, 'list.yaml'), `apiVersion: v1\nkind: List\nitems:\n  - apiVersion: v1\n    kind: Service\n    metadata: {name: s1}\n`);
    await rec.until((r) => r.states.length === 2);
    expect(names(rec.last)).toEqual(['InferencePool default/p1', 'Service default/s1']);
  });

  it('emits nothing when the content is unchanged', async () => {
    const file = join(dir, 'pools.yaml');
    await writeFile(file, pool('p1'));
    const { rec } = await startSource([dir], FAST);
    await writeFile(file, pool('p1'));
    await writeFile(join(dir, 'notes.txt'), 'not a manifest');
    await sleep(800);
    expect(rec.states).toHaveLength(1);
    expect(rec.errors).toEqual([]);
  });

  it('reports the same unreadable content only once', async () => {
    const file = join(dir, 'pools.yaml');
    await writeFile(file, pool('p1'));
    const { rec } = await startSource([dir], FAST);
    await writeFile(file, 'kind: [\n');
    await rec.until((r) => r.states.length === 2);
    await writeFile(join(dir, 'notes.txt'), 'touch the directory');
    await writeFile(file, 'kind: [\n');
    await sleep(600);
    expect(rec.states).toHaveLength(2);
    expect(rec.errors).toEqual([]);
  });

  it('stop() is idempotent and no callbacks arrive after it', async () => {
    const file = join(dir, 'pools.yaml');
    await writeFile(file, pool('p1'));
    const { source, rec } = await startSource([dir], FAST);
    await writeFile(file, pool('p2'));
    await source.stop();
    await source.stop();
    await writeFile(file, pool('p3'));
    await sleep(600);
    expect(rec.states).toHaveLength(1);
    expect(rec.errors).toEqual([]);
  });

  it('start() rejects on a missing path with a clear error', async () => {
    const source = new ManifestSource({ cluster: 'cluster-b', paths: [join(dir, 'nope')], ...FAST });
    const rec = new Recorder();
    const err = await source.start(rec).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ManifestSourceError);
    expect(err).toMatchObject({
      cluster: 'cluster-b',
      reason: 'read',
      errors: [],
      message: `cannot read manifests: ${join(dir, 'nope')}: no such file or directory`,
    });
    expect(rec.states).toEqual([]);
    await source.stop();
  });

  it('start() rejects unreadable initial content, naming every document', async () => {
    await writeFile(join(dir, 'a.yaml'), docs(pool('p1'), 'apiVersion: v1\nkind: Service\nmetadata: {}\n', '42\n'));
    const source = new ManifestSource({ cluster: 'c', paths: [dir], ...FAST });
    const err = await source.start(new Recorder()).catch((e: unknown) => e);
    expect((err as ManifestSourceError).reason).toBe('parse');
    expect((err as ManifestSourceError).sourceError.errors.map((e) => [e.origin, e.path])).toEqual([
      [`${join(dir, 'a.yaml')}#1`, 'metadata.name'],
      [`${join(dir, 'a.yaml')}#2`, ''],
    ]);
  });

  it('start() serves semantically invalid initial content, leaving those objects out', async () => {
    await writeFile(join(dir, 'a.yaml'), docs(pool('p1', { port: 0 }), service('EPP'), service('ok')));
    const { rec } = await startSource([dir], FAST);
    expect(names(rec.last)).toEqual(['Service default/ok']);
    expect(rec.last?.errors.map((e) => [e.object, e.path])).toEqual([
      ['InferencePool default/p1', 'spec.targetPorts[0].number'],
      ['Service default/EPP', 'metadata.name'],
    ]);
  });
});

describe('ManifestSource: manifests.maxFileBytes', () => {
  const LIMIT = 4096;

  it('rejects a file over the cap naming it, keeps the last good objects, and applies again once it shrinks', async () => {
    const file = join(dir, 'pools.yaml');
    await writeFile(file, docs(pool('p1'), service('p1-epp')));
    const source = new ManifestSource({ cluster: 'cluster-a', paths: [dir], ...FAST, maxFileBytes: LIMIT });
    sources.push(source);
    const rec = new Recorder();
    await source.start(rec);
    const good = rec.last;

    const padded = docs(pool('p2'), service('p2-epp')) + `# ${'x'.repeat(LIMIT)}\n`;
    await writeFile(file, padded);
    await rec.until((r) => r.errors.length === 1);
    expect(rec.errors[0]).toMatchObject({
      cluster: 'cluster-a',
      reason: 'read',
      message: `cannot read manifests: ${file} is ${Buffer.byteLength(padded)} bytes, over the limit of ${LIMIT} (manifests.maxFileBytes); change rejected`,
    });
    expect(rec.states).toHaveLength(1);
    expect(source.state).toBe(good);

    await writeFile(file, docs(pool('p2'), service('p2-epp')));
    await rec.until((r) => r.states.length === 2);
    expect(names(rec.last)).toEqual(['InferencePool default/p2', 'Service default/p2-epp']);
  });

  it('start() rejects an initial file over the cap, naming it', async () => {
    await writeFile(join(dir, 'big.yaml'), `# ${'x'.repeat(LIMIT)}\n`);
    const source = new ManifestSource({ cluster: 'c', paths: [dir], ...FAST, maxFileBytes: LIMIT });
    const err = await source.start(new Recorder()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ManifestSourceError);
    expect((err as Error).message).toContain(`${join(dir, 'big.yaml')} is ${LIMIT + 3} bytes, over the limit of ${LIMIT}`);
    await source.stop();
  });
});
