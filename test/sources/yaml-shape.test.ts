import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseManifestText } from '../../src/sources/manifest-text.js';
import { MAX_YAML_DEPTH, MAX_YAML_DOCUMENTS, yamlShapeProblem } from '../../src/sources/yaml-shape.js';
import { timeWork } from '../helpers/work-time.js';

describe('yamlShapeProblem: refuses what would stall the YAML parser, before parsing', () => {
  it.each([
    ['flow brackets', '['.repeat(20_000)],
    ['flow mappings', '{a: '.repeat(20_000)],
    ['block sequences on one line', `${'- '.repeat(20_000)}x\n`],
    ['block indentation', Array.from({ length: 300 }, (_v, i) => `${' '.repeat(i)}k${i}:`).join('\n')],
  ])('%s nested past the limit', (_what, text) => {
    const t = timeWork(() => parseManifestText(text, 'routes.yaml'));
    const { docs, errors } = t.result;
    expect(t.ms).toBeLessThan(500); // the yaml library alone: seconds (20 KB of '[')
    expect(docs).toEqual([]);
    expect(errors).toEqual([{ object: 'routes.yaml', path: '', message: `YAML nested more than ${MAX_YAML_DEPTH} levels deep; not parsed`, origin: 'routes.yaml#0' }]);
  });

  it('more documents than the limit', () => {
    expect(yamlShapeProblem('a: 1\n---\n'.repeat(MAX_YAML_DOCUMENTS - 1))).toBeUndefined();
    expect(yamlShapeProblem('---\n'.repeat(MAX_YAML_DOCUMENTS))).toBe(`more than ${MAX_YAML_DOCUMENTS} YAML documents in one file`);
  });

  it('real manifests pass: the deeply nested CRD schema, flow lists, brackets inside strings and plain scalars', () => {
    expect(yamlShapeProblem(readFileSync(new URL('../../deploy/crds/inferencepoolimports.yaml', import.meta.url), 'utf8'))).toBeUndefined();
    expect(yamlShapeProblem('a: [1, [2, {b: "[[[[", c: \'{{{{\'}]]\nd: /v1/[a-z\nre: "(a+)+["\n# [[[[[[\n')).toBeUndefined();
    const deep = Array.from({ length: MAX_YAML_DEPTH - 1 }, (_v, i) => `${'  '.repeat(i)}k${i}:`).join('\n');
    expect(yamlShapeProblem(`${deep} 1\n`)).toBeUndefined();
  });
});
