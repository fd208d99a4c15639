/**
 * The router config the chart renders, loaded as the router loads it (src/config/load.ts), and
 * the environment variables the router reads: what the chart tests and the docs tests hold the
 * chart's output to.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { CONFIG_ENV } from '../../src/cli/args.js';
import { parseConfigText } from '../../src/config/load.js';
import { routerConfigSchema, type RouterConfig } from '../../src/config/schema.js';
import { namedConfig } from '../../src/config/local-name.js';
import { find, REPO, type K8sObject, type Obj, type Rendered } from './render-chart.js';

/**
 * Whether this tree's router config schema has the Endpoint Picker role (`endpointPicker`,
 * `listen.relay`). Until it does, those two keys are checked by the chart tests' own assertions
 * and everything else of the rendered config by the schema.
 */
export const SCHEMA_HAS_ENDPOINT_PICKER = 'endpointPicker' in routerConfigSchema.shape;

/** The rendered router.yaml text. */
export function routerConfigText(r: Rendered): string {
  return (find(r, 'ConfigMap', '-router') as K8sObject & { data: Record<string, string> }).data['router.yaml']!;
}

/** Loads router config text as the router does (see SCHEMA_HAS_ENDPOINT_PICKER). */
export function loadRouterConfigText(text: string, file = 'router.yaml', dir = '/etc/mcip-router'): RouterConfig {
  if (SCHEMA_HAS_ENDPOINT_PICKER) return namedConfig(parseConfigText(text, file, dir));
  const doc = parse(text) as Obj & { listen?: Obj };
  delete doc.endpointPicker;
  if (doc.listen) delete doc.listen.relay;
  return namedConfig(parseConfigText(stringify(doc), file, dir));
}

/** The rendered router config exactly as the router loads it. */
export function routerConfig(r: Rendered): RouterConfig {
  return loadRouterConfigText(routerConfigText(r));
}

/** Env var names the router reads: process.env.X anywhere in src/, and the CLI's config variable. */
export function envVarsReadBySrc(): Set<string> {
  const names = new Set<string>([CONFIG_ENV]);
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.ts')) for (const m of readFileSync(p, 'utf8').matchAll(/process\.env(?:\.([A-Z_][A-Z0-9_]*)|\[['"]([A-Z_][A-Z0-9_]*)['"]\])/g)) names.add((m[1] ?? m[2])!);
    }
  };
  walk(path.join(REPO, 'src'));
  return names;
}
