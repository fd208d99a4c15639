/**
 * Shared helpers for the Envoy config tests: the shipped files, parsed trees,
 * navigation into them, and a mutate-then-validate helper.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';
import { formatError, validateEnvoyConfig } from './validate-envoy-config.js';

export const ENVOY_DIR = fileURLToPath(new URL('../../envoy/', import.meta.url));

/** Every Envoy config shipped in envoy/. */
export function envoyFiles(): string[] {
  return fs
    .readdirSync(ENVOY_DIR)
    .filter((f) => f.endsWith('.yaml') || f.endsWith('.yml'))
    .sort();
}

/** The relay's bootstraps (a router in the Endpoint Picker role), Endpoint and Parent mode: their own checks in relay-config.test.ts. */
export const RELAY_FILE = 'relay.yaml';
export const RELAY_PARENT_FILE = 'relay-parent-tls.yaml';
export const RELAY_FILES: readonly string[] = [RELAY_FILE, RELAY_PARENT_FILE];

/** The configs of the router's own Envoy in front of it (every shipped config but the relay's). */
export function sidecarFiles(): string[] {
  return envoyFiles().filter((f) => !RELAY_FILES.includes(f));
}

// Config trees are free-form YAML: tests navigate them loosely.
export type Tree = any;

export function loadConfig(file = 'envoy.yaml'): Tree {
  return YAML.parse(fs.readFileSync(path.join(ENVOY_DIR, file), 'utf8'));
}

export const HCM_PATH = 'static_resources.listeners[0].filter_chains[0].filters[0].typed_config';

export function hcm(doc: Tree): Tree {
  return doc.static_resources.listeners[0].filter_chains[0].filters[0].typed_config;
}

/** Index of the HTTP filter whose typed_config has the given full type name. */
export function filterIndex(doc: Tree, typeName: string): number {
  return (hcm(doc).http_filters as Tree[]).findIndex((f) => f.typed_config?.['@type'] === `type.googleapis.com/${typeName}`);
}

export const EXT_PROC_TYPE = 'envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor';
export const HEALTH_CHECK_TYPE = 'envoy.extensions.filters.http.health_check.v3.HealthCheck';
export const HEADER_MUTATION_TYPE = 'envoy.extensions.filters.http.header_mutation.v3.HeaderMutation';
export const HTTP_OPTIONS_TYPE = 'envoy.extensions.upstreams.http.v3.HttpProtocolOptions';

export function extProc(doc: Tree): Tree {
  return hcm(doc).http_filters[filterIndex(doc, EXT_PROC_TYPE)].typed_config;
}

export function extProcPath(doc: Tree): string {
  return `${HCM_PATH}.http_filters[${filterIndex(doc, EXT_PROC_TYPE)}].typed_config`;
}

export function clusterIndex(doc: Tree, name: string): number {
  return (doc.static_resources.clusters as Tree[]).findIndex((c) => c.name === name);
}

export function cluster(doc: Tree, name: string): Tree {
  return doc.static_resources.clusters[clusterIndex(doc, name)];
}

export function route(doc: Tree): Tree {
  return hcm(doc).route_config.virtual_hosts[0].routes[0];
}

/** Renames a key in place, keeping its value. */
export function rename(obj: Tree, from: string, to: string): void {
  if (!(from in obj)) throw new Error(`fixture has no key "${from}"`);
  obj[to] = obj[from];
  delete obj[from];
}

/** Validates envoy.yaml (or `file`) after `change` edits a fresh copy; returns formatted errors. */
export function errorsAfter(change: (doc: Tree) => void, file = 'envoy.yaml'): string[] {
  const doc = loadConfig(file);
  change(doc);
  return validateEnvoyConfig(doc).map(formatError);
}

/**
 * The router cluster's max_requests_per_connection in a shipped config: how many ext_proc
 * streams Envoy sends over one connection to the router before opening a new one (the
 * data-path tests and the demo's front door rotate connections the same way).
 */
export function routerMaxRequestsPerConnection(file = 'envoy.yaml'): number {
  const opts = cluster(loadConfig(file), 'mcip_router').typed_extension_protocol_options[HTTP_OPTIONS_TYPE];
  const n: unknown = opts?.common_http_protocol_options?.max_requests_per_connection;
  if (typeof n !== 'number') throw new Error(`${file}: mcip_router has no max_requests_per_connection`);
  return n;
}
