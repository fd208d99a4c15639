/**
 * Router config loading: read the YAML file, validate it against
 * routerConfigSchema and resolve relative file paths (manifest paths, TLS files)
 * against the config file's directory. Every problem is collected into one
 * ConfigError so the operator sees them all at once.
 */
import { readFile } from 'node:fs/promises';
import { dirname, isAbsolute, resolve } from 'node:path';
import { parseDocument } from 'yaml';
import type { z } from 'zod';
import type { LoadedRouterConfig } from './schema.js';
import { routerConfigSchema } from './schema.js';

export interface ConfigIssue {
  /** e.g. "clusters[1].manifests.paths"; "" for the file as a whole. */
  readonly path: string;
  readonly message: string;
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(
    /** The file as named in messages. */
    readonly file: string,
    readonly issues: readonly ConfigIssue[],
  ) {
    super(issues.map((i) => (i.path === '' ? `${file}: ${i.message}` : `${file}: ${i.path}: ${i.message}`)).join('\n'));
  }
}

/** Formats a zod path as "clusters[1].manifests.paths". */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else out += out === '' ? String(seg) : `.${String(seg)}`;
  }
  return out;
}

function issuesFromZod(error: z.ZodError): ConfigIssue[] {
  const out: ConfigIssue[] = [];
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) out.push({ path: formatPath([...issue.path, key]), message: 'unknown key' });
    } else {
      out.push({ path: formatPath(issue.path), message: issue.message });
    }
  }
  return out;
}

/**
 * Resolves file paths against the config file's directory: clusters[].manifests.paths,
 * the kubeconfig of a kubernetes source or of the fleet hub and, anywhere in the config, every string field whose key ends in "File"
 * (tls.caFile, certFile, keyFile, metrics bearerTokenFile, ...). The convention
 * keeps later additions to the schema resolved without touching this function.
 */
function resolvePaths(cfg: LoadedRouterConfig, baseDir: string): LoadedRouterConfig {
  const abs = (p: string): string => (isAbsolute(p) ? p : resolve(baseDir, p));
  const walk = (v: unknown, key: string | undefined, parentKey: string | undefined): unknown => {
    if (typeof v === 'string') return key?.endsWith('File') || (key === 'kubeconfig' && (parentKey === 'kubernetes' || parentKey === 'hub')) ? abs(v) : v;
    if (Array.isArray(v)) {
      const isManifestPaths = key === 'paths' && parentKey === 'manifests';
      return v.map((item) => (isManifestPaths && typeof item === 'string' ? abs(item) : walk(item, undefined, key)));
    }
    if (typeof v === 'object' && v !== null) {
      return Object.fromEntries(Object.entries(v).map(([k, item]) => [k, walk(item, k, key)]));
    }
    return v;
  };
  return walk(cfg, undefined, undefined) as LoadedRouterConfig;
}

/** The yaml library's message without its " at line L, column C:" suffix and source excerpt. */
function yamlMessage(message: string): string {
  return (message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '');
}

/**
 * Parses and validates config text. `fileForMessages` prefixes every issue;
 * relative paths are resolved against `baseDir`. Throws ConfigError. The local
 * cluster's name may still be open: the start-up names it
 * (sources/identity/resolve-local.ts).
 */
export function parseConfigText(text: string, fileForMessages: string, baseDir: string): LoadedRouterConfig {
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    throw new ConfigError(
      fileForMessages,
      doc.errors.map((e) => {
        const pos = e.linePos?.[0];
        const where = pos ? `line ${pos.line}, column ${pos.col}: ` : '';
        return { path: '', message: `YAML syntax error: ${where}${yamlMessage(e.message)}` };
      }),
    );
  }
  const data: unknown = doc.toJS();
  const result = routerConfigSchema.safeParse(data, {
    error: (iss) => (iss.code === 'invalid_type' && iss.input === undefined ? `required (expected ${iss.expected})` : undefined),
  });
  if (!result.success) {
    if (data === null || data === undefined) throw new ConfigError(fileForMessages, [{ path: '', message: 'the file is empty' }]);
    throw new ConfigError(fileForMessages, issuesFromZod(result.error));
  }
  return resolvePaths(result.data, baseDir);
}

/** Reads and validates the router config file. Throws ConfigError. */
export async function loadConfig(file: string): Promise<LoadedRouterConfig> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    const why = err.code === 'ENOENT' ? 'file not found' : err.code === 'EISDIR' ? 'is a directory' : err.message;
    throw new ConfigError(file, [{ path: '', message: `cannot read config: ${why}` }]);
  }
  return parseConfigText(text, file, dirname(resolve(file)));
}
