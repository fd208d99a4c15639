// The repository stands alone: nothing points outside it, user-facing docs speak of the
// product (no internal tracker numbers or draft markers), and the license is really there.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const tracked = execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' })
  .split('\n')
  .filter((f) => f !== '' && !f.startsWith('bench/results/') && existsSync(`${ROOT}/${f}`));
const text = (f: string) => readFileSync(`${ROOT}/${f}`, 'utf8');
const THIS_FILE = 'test/docs/standalone.test.ts';

describe('the repository stands alone', () => {
  it('no tracked file points at a document outside the repository', () => {
    const outside = tracked.filter((f) => f !== THIS_FILE && /\.\.\/shared\b|protocol-notes/.test(text(f)));
    expect(outside).toEqual([]);
  });

  it('user-facing docs carry no internal issue numbers or draft markers', () => {
    const docs = tracked.filter((f) => f.endsWith('.md'));
    expect(docs.length).toBeGreaterThan(5);
    const offenders = docs.flatMap((f) =>
      text(f)
        .split('\n')
        .map((line, i) => ({ where: `${f}:${i + 1}`, line }))
        .filter(({ line }) => /\b[Ii]ssues? \d+\b|\bDraft\b|\bTODO\b|\bFIXME\b/.test(line)),
    );
    expect(offenders).toEqual([]);
  });

  it('speaks of Node 20 only as end of life (supported runtimes are 22, 24 and 26)', () => {
    const offenders = tracked
      .filter((f) => f !== THIS_FILE && !f.startsWith('test/'))
      .flatMap((f) =>
        text(f)
          .split('\n')
          .map((line, i) => ({ where: `${f}:${i + 1}`, line }))
          .filter(({ line }) => /\bNode(?:\.js)? 20\b/.test(line) && !/end of life/.test(line)),
      );
    expect(offenders).toEqual([]);
  });

  it('ships the license package.json names', () => {
    const pkg = JSON.parse(text('package.json')) as { license: string };
    expect(pkg.license).toBe('Apache-2.0');
    const license = text('LICENSE');
    expect(license).toMatch(/Apache License\s+Version 2\.0, January 2004/);
    expect(license).toMatch(/TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION/);
  });

  it('docs/protocol.md numbers the sections the code cites', () => {
    const sections = [...text('docs/protocol.md').matchAll(/^## (\d+)\. /gm)].map((m) => Number(m[1]));
    const cited = new Set<number>();
    for (const f of tracked.filter((f) => /\.(ts|md|yaml)$/.test(f))) {
      for (const m of text(f).matchAll(/docs\/protocol\.md[^\n]{0,12}?§(\d+)(?:[^\n]{0,8}?§(\d+))?/g)) {
        cited.add(Number(m[1]));
        if (m[2] !== undefined) cited.add(Number(m[2]));
      }
    }
    expect(cited.size).toBeGreaterThan(0);
    for (const s of cited) expect(sections, `§${s} is cited`).toContain(s);
  });
});
