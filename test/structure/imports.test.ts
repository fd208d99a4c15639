/**
 * The import structure of src/: no import cycle between files (type-only imports
 * count: a cycle that works only because functions are hoisted or types erased is
 * still one concept split across two places), and no folder importing from a
 * folder above it in the layer order the README documents ("Layers, lowest
 * first"). Every folder of src/ must have its place in that order.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SRC = join(ROOT, 'src');

/** Lowest first; the folders (or top-level files) of one entry may import each other. */
const LAYERS: readonly (readonly string[])[] = [
  ['log.ts', 'build-info.ts', 'protocol', 'model'],
  ['config'],
  ['sources'],
  ['credentials'],
  ['snapshot'],
  ['transport'],
  ['signals'],
  ['picker'],
  ['extproc'],
  ['relay'],
  ['telemetry'],
  ['admin'],
  ['controller'],
  ['runtime'],
  ['cli'],
  ['main.ts'],
];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** Every relative module a file imports or re-exports (static, side-effect and dynamic imports; `import type` too). */
function importsOf(text: string): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
  const specs: string[] = [];
  const patterns = [/\b(?:import|export)\s[^'"`;]*?\bfrom\s*['"]([^'"]+)['"]/g, /\bimport\s*['"]([^'"]+)['"]/g, /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g];
  for (const p of patterns) for (const m of code.matchAll(p)) specs.push(m[1]!);
  return specs.filter((s) => s.startsWith('.'));
}

/** src-relative path -> the src-relative files it imports. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(SRC)) {
    const from = relative(SRC, file);
    const to = importsOf(readFileSync(file, 'utf8')).map((s) => normalize(join(dirname(from), s.replace(/\.js$/, '.ts'))));
    graph.set(from, to);
  }
  return graph;
}

/** The strongly connected groups of more than one file (Tarjan), each sorted. */
function cyclesOf(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const group: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        group.push(w);
      } while (w !== v);
      if (group.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(group.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out;
}

const folderOf = (file: string): string => file.split('/')[0]!;
const rank = new Map(LAYERS.flatMap((folders, i) => folders.map((f) => [f, i] as const)));

describe('import structure of src/', () => {
  const graph = importGraph();

  it('every import names a file of src/', () => {
    const missing = [...graph].flatMap(([from, to]) => to.filter((t) => !graph.has(t)).map((t) => `${from} -> ${t}`));
    expect(missing).toEqual([]);
  });

  it('has no import cycle (other than the known ones, which must still exist)', () => {
    const cycles = cyclesOf(graph).map((c) => c.join(' <-> '));
    expect(cycles).toEqual([]);
  });

  it('places every folder of src/ in a layer', () => {
    expect([...new Set([...graph.keys()].map(folderOf))].filter((f) => !rank.has(f)).sort()).toEqual([]);
  });

  it('imports only from the same layer or a lower one', () => {
    const upward = [...graph].flatMap(([from, to]) =>
      to.filter((t) => rank.get(folderOf(t))! > rank.get(folderOf(from))!).map((t) => `${from} -> ${t}`),
    );
    expect(upward).toEqual([]);
  });

  it('is the layer order the README documents', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const paragraph = /^Layers, lowest first[^:]*:\s*([\s\S]+?)\n\n/m.exec(readme)?.[1];
    expect(paragraph).toBeDefined();
    const order = paragraph!.replace(/\s+/g, ' ').trim().replace(/\.$/, '');
    const documented = order.split(' → ').map((layer) => layer.split(', ').map((f) => f.replace(/`/g, '').replace(/^src\//, '').replace(/\/$/, '')));
    expect(documented).toEqual(LAYERS);
  });
});

describe('the structure check itself', () => {
  it('reads every import form, and finds cycles (type-only ones too) and self-imports', () => {
    const text = [
      "import { a } from './a.js';",
      "import type {\n  B,\n} from '../b/b.js';",
      "export { c } from './c.js';",
      "import './side.js';",
      "const d = await import('./d.js');",
      "// import { no } from './commented.js';",
      "import { z } from 'zod';",
    ].join('\n');
    expect(importsOf(text)).toEqual(['./a.js', '../b/b.js', './c.js', './side.js', './d.js']);
    const g = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['a.ts']],
      ['c.ts', ['c.ts']],
      ['d.ts', ['a.ts']],
    ]);
    expect(cyclesOf(g)).toEqual([['a.ts', 'b.ts'], ['c.ts']]);
  });
});
