import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { listManifestFiles, readClusterManifests } from '../../src/sources/manifest-files.js';
import { parseManifestText } from '../../src/sources/manifest-text.js';
import { loadManifests } from '../../src/sources/manifest-source.js';
import { CONFIGMAP, docs, names, pool, service, tempDir } from './manifest-fixtures.js';

let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => {
  ({ dir, cleanup } = await tempDir());
});
afterEach(async () => {
  await cleanup();
});

describe('listManifestFiles', () => {
  it('walks directories recursively, keeping yaml/yml/json and skipping dot entries', async () => {
    await mkdir(join(dir, 'sub', 'deeper'), { recursive: true });
    await mkdir(join(dir, '.hidden'));
    for (const f of ['b.yaml', 'a.yml', 'c.json', 'notes.txt', '.a.yaml.swp', '.x.yaml', 'sub/d.yaml', 'sub/deeper/e.YAML', '.hidden/f.yaml']) {
      await writeFile(join(dir, f), '');
    }
    const other = join(dir, 'sub', 'explicit.txt');
    await writeFile(other, '');
    const listing = await listManifestFiles([dir, other]);
    expect(listing.files).toEqual([
      join(dir, 'a.yml'),
      join(dir, 'b.yaml'),
      join(dir, 'c.json'),
      join(dir, 'sub/d.yaml'),
      join(dir, 'sub/deeper/e.YAML'),
      other,
    ]);
    expect(listing.dirs).toEqual([dir, join(dir, 'sub'), join(dir, 'sub/deeper')]);
  });

  it('follows symlinks, skips dangling ones and survives loops', async () => {
    await mkdir(join(dir, 'real'));
    await writeFile(join(dir, 'real', 'x.yaml'), '');
    await symlink(join(dir, 'real', 'x.yaml'), join(dir, 'link.yaml'));
    await symlink(join(dir, 'missing.yaml'), join(dir, 'dangling.yaml'));
    await symlink(dir, join(dir, 'real', 'loop'));
    const listing = await listManifestFiles([dir]);
    expect(listing.files).toEqual([join(dir, 'link.yaml'), join(dir, 'real', 'x.yaml')]);
  });

  it('rejects a missing path', async () => {
    await expect(listManifestFiles([join(dir, 'nope')])).rejects.toThrow(`${join(dir, 'nope')}: no such file or directory`);
  });
});

describe('parseManifestText', () => {
  it('splits documents, skips empty ones and flattens List kinds', () => {
    const list = `apiVersion: v1
kind: List
items:
  - ${service('a').trim().split('\n').join('\n    ')}
  - apiVersion: v1
    kind: Service
    metadata: {name: b}
`;
    const { docs: out, errors } = parseManifestText(docs(pool('p'), '# only a comment\n', list), 'f.yaml');
    expect(errors).toEqual([]);
    expect(out.map((d) => d.origin)).toEqual(['f.yaml#0', 'f.yaml#2.items[0]', 'f.yaml#2.items[1]']);
  });

  it('reports syntax errors with the document index and line', () => {
    const { errors } = parseManifestText(docs(pool('p'), 'kind: Service\nmetadata: {name: [x\n'), 'f.yaml');
    expect(errors).toEqual([
      { object: 'f.yaml', path: '', message: expect.stringMatching(/^YAML syntax error at line 1[67], column \d+: /), origin: 'f.yaml#1' },
    ]);
  });
});

describe('readClusterManifests / loadManifests', () => {
  it('loads valid objects, ignoring other kinds, with a content revision', async () => {
    await writeFile(join(dir, 'a.yaml'), docs(pool('p1'), service('p1-epp'), CONFIGMAP));
    await writeFile(join(dir, 'b.json'), JSON.stringify({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'other', namespace: 'ns' } }));
    const { state, error } = await loadManifests('cluster-a', [dir]);
    expect(error).toBeUndefined();
    expect(state).toMatchObject({ cluster: 'cluster-a', errors: [], stale: false, revision: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(names(state)).toEqual(['InferencePool default/p1', 'Service default/p1-epp', 'Service ns/other']);
    expect((await loadManifests('cluster-a', [dir])).state?.revision).toBe(state?.revision);
  });

  it('loads a List kind', async () => {
    const list = { apiVersion: 'v1', kind: 'ServiceList', items: [{ apiVersion: 'v1', kind: 'Service', metadata: { name: 's1' } }] };
    await writeFile(join(dir, 'list.json'), JSON.stringify(list));
    expect(names((await loadManifests('c', [dir])).state)).toEqual(['Service default/s1']);
  });

  it('leaves out a duplicate across files, naming both places', async () => {
    await writeFile(join(dir, 'a.yaml'), pool('p1'));
    await writeFile(join(dir, 'b.yaml'), docs(service('s'), pool('p1', { port: 9000 })));
    const { state, error } = await loadManifests('c', [dir]);
    expect(error).toBeUndefined();
    expect(names(state)).toEqual(['InferencePool default/p1', 'Service default/s']);
    expect(state?.errors).toEqual([
      {
        object: 'InferencePool default/p1',
        ref: { kind: 'InferencePool', namespace: 'default', name: 'p1' },
        reason: 'DuplicateObject',
        path: 'metadata.name',
        message: `duplicate object: also defined at ${join(dir, 'a.yaml')}#0; this copy is left out`,
        origin: `${join(dir, 'b.yaml')}#1`,
      },
    ]);
  });

  it('leaves out every invalid object with its origin and keeps the rest', async () => {
    await writeFile(join(dir, 'a.yaml'), docs(pool('ok'), pool('bad', { port: 0 }), service('Bad')));
    const { state, error } = await loadManifests('c', [dir]);
    const file = join(dir, 'a.yaml');
    expect(error).toBeUndefined();
    expect(names(state)).toEqual(['InferencePool default/ok']);
    expect(state?.errors.map((e) => [e.origin, e.object, e.path, e.ref?.name])).toEqual([
      [`${file}#1`, 'InferencePool default/bad', 'spec.targetPorts[0].number', 'bad'],
      [`${file}#2`, 'Service default/Bad', 'metadata.name', 'Bad'],
    ]);
  });

  it('on a reload, uses the last good content of a file that no longer parses', async () => {
    const file = join(dir, 'a.yaml');
    await writeFile(file, pool('p1'));
    const first = await readClusterManifests('c', [dir]);
    if (first.type !== 'ok') throw new Error('first read failed');
    await writeFile(file, 'kind: [\n');
    const second = await readClusterManifests('c', [dir], first.files);
    expect(second.type === 'ok' && names(second.state)).toEqual(['InferencePool default/p1']);
    expect(second.type === 'ok' && second.state.revision).toBe(first.state.revision);
    expect(second.type === 'ok' && second.rejected?.reason).toBe('parse');
    // A new file that never parsed contributes nothing.
    const fresh = await readClusterManifests('c', [dir], new Map());
    expect(fresh.type === 'ok' && fresh.state.objects).toEqual([]);
    expect(fresh.type === 'ok' && fresh.rejected?.message).toContain('YAML syntax error');
  });

  it('reports YAML syntax errors as parse errors naming file and line', async () => {
    await writeFile(join(dir, 'a.yaml'), 'kind: [\n');
    const { error } = await loadManifests('c', [dir]);
    expect(error?.reason).toBe('parse');
    expect(error?.message).toMatch(new RegExp(`YAML syntax error in ${join(dir, 'a.yaml')}`));
    expect(error?.message).toMatch(/line \d+, column \d+/);
  });

  it('reports a missing path as a read error', async () => {
    const { error } = await loadManifests('c', [join(dir, 'gone')]);
    expect(error).toMatchObject({ reason: 'read', errors: [] });
    expect(error?.message).toContain('no such file or directory');
  });

  it('treats an explicitly named file of any extension as a manifest', async () => {
    await writeFile(join(dir, 'pools.txt'), pool('p'));
    const read = await readClusterManifests('c', [join(dir, 'pools.txt')]);
    expect(read.type === 'ok' && names(read.state)).toEqual(['InferencePool default/p']);
  });
});
