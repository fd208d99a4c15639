/**
 * Re-renders the Markdown summary and the SVG charts of a results file:
 * `tsx bench/render.ts bench/results/<date>.json` (writes next to it).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { BenchResults } from './lib/types.js';
import { controlPlaneChart, latencyChart } from './report/charts.js';
import { renderFleetMarkdown, renderMarkdown } from './report/markdown.js';

const file = process.argv[2];
if (!file) {
  process.stderr.write('usage: tsx bench/render.ts RESULTS.json\n');
  process.exit(2);
}
const results = JSON.parse(readFileSync(file, 'utf8')) as BenchResults;
const dir = dirname(file);
const name = basename(file, '.json');
const files = { svg: `${name}.svg`, cpSvg: `${name}-control-plane.svg` };
if (results.fleet && results.dataPath.setups.length === 0 && results.controlPlane.build.length === 0) {
  // A fleet-only run (--only-fleet): its summary, no charts.
  writeFileSync(join(dir, `${name}.md`), renderFleetMarkdown(results) + '\n');
  process.stdout.write(`rendered ${join(dir, name)}.md\n`);
  process.exit(0);
}
writeFileSync(join(dir, files.svg), latencyChart(results));
writeFileSync(join(dir, files.cpSvg), controlPlaneChart(results));
writeFileSync(join(dir, `${name}.md`), renderMarkdown(results, files) + '\n');
process.stdout.write(`rendered ${join(dir, name)}.{md,svg} and ${files.cpSvg}\n`);
