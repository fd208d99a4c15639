/**
 * Reading one cluster's manifests: list files under the configured paths, read
 * each (src/sources/manifest-text.ts splits a file into documents,
 * src/sources/manifest-documents.ts decodes them and draws the line between a
 * rejected file change and an object left out).
 */
import { createHash } from 'node:crypto';
import type { Dirent } from 'node:fs';
import { readdir, readFile, realpath, stat } from 'node:fs/promises';
import { dirname, extname, join, resolve } from 'node:path';
import type { FieldError } from '../model/types.js';
import { assembleObjects, readFileContent, type FileCache, type FileContent } from './manifest-documents.js';
import type { ClusterState, SourceError } from './types.js';

export const MANIFEST_EXTENSIONS: readonly string[] = ['.yaml', '.yml', '.json'];

export interface ManifestListing {
  /** Manifest files, in a stable order. */
  readonly files: readonly string[];
  /** Directories whose changes matter: every walked directory, and the parent of each configured file. */
  readonly dirs: readonly string[];
}

export class ManifestReadError extends Error {
  override readonly name = 'ManifestReadError';
  constructor(
    message: string,
    readonly path: string,
    readonly code?: string,
  ) {
    super(message);
  }
}

function errnoCode(e: unknown): string | undefined {
  return (e as NodeJS.ErrnoException | undefined)?.code;
}

function describeErrno(path: string, e: unknown): string {
  const code = errnoCode(e);
  if (code === 'ENOENT') return `${path}: no such file or directory`;
  if (code === 'EACCES') return `${path}: permission denied`;
  return `${path}: ${(e as Error).message}`;
}

/**
 * Lists manifest files. Directories are walked recursively; entries whose name
 * starts with "." are skipped (this skips a ConfigMap mount's "..data" and
 * "..<timestamp>" directories while the visible symlinks into them are read).
 * Dangling symlinks inside directories are skipped. A configured path that does
 * not exist throws ManifestReadError.
 */
export async function listManifestFiles(paths: readonly string[]): Promise<ManifestListing> {
  const files = new Set<string>();
  const dirs = new Set<string>();
  const visited = new Set<string>();

  const walk = async (dir: string): Promise<void> => {
    const real = await realpath(dir);
    if (visited.has(real)) return; // symlink loop or the same directory twice
    visited.add(real);
    dirs.add(dir);
    let entries: Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (e) {
      throw new ManifestReadError(describeErrno(dir, e), dir, errnoCode(e));
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      if (entry.name.startsWith('.')) continue;
      const full = join(dir, entry.name);
      let isDir = entry.isDirectory();
      let isFile = entry.isFile();
      if (entry.isSymbolicLink()) {
        const st = await stat(full).catch(() => undefined);
        if (!st) continue; // dangling
        isDir = st.isDirectory();
        isFile = st.isFile();
      }
      if (isDir) await walk(full);
      else if (isFile && MANIFEST_EXTENSIONS.includes(extname(entry.name).toLowerCase())) files.add(full);
    }
  };

  for (const p of paths) {
    const root = resolve(p);
    let st;
    try {
      st = await stat(root);
    } catch (e) {
      throw new ManifestReadError(describeErrno(root, e), root, errnoCode(e));
    }
    if (st.isDirectory()) {
      await walk(root);
    } else {
      files.add(root);
      dirs.add(dirname(root));
    }
  }
  return { files: [...files], dirs: [...dirs] };
}

export function formatFieldError(e: FieldError): string {
  return [e.origin, e.object, e.path, e.message].filter((s) => s !== undefined && s !== '').join(': ');
}

/** A SourceError whose message is the summary followed by one line per FieldError (the cluster is a separate field). */
function sourceError(cluster: string, reason: SourceError['reason'], summary: string, errors: readonly FieldError[]): SourceError {
  const lines = errors.map((e) => `  ${formatFieldError(e)}`);
  return { cluster, reason, message: [summary, ...lines].join('\n'), errors };
}

export type ClusterRead =
  | {
      readonly type: 'ok';
      readonly state: ClusterState;
      readonly listing: ManifestListing;
      /** Each used file's content, for the next read. */
      readonly files: FileCache;
      /** Files whose change was rejected as unreadable; their last good version (if any) is in the state. */
      readonly rejected?: SourceError;
      /** Identifies the rejected texts, so the same rejection is reported once. */
      readonly rejectedKey?: string;
    }
  | { readonly type: 'error'; readonly error: SourceError; readonly listing?: ManifestListing; readonly revision?: string }
  /** A listed file vanished while being read (e.g. a non-atomic save): read again shortly. */
  | { readonly type: 'vanished'; readonly listing: ManifestListing };

function unreadableSummary(errors: readonly FieldError[], kept: string): string {
  const files = [...new Set(errors.map((e) => e.origin?.replace(/#.*$/, '') ?? e.object))].join(', ');
  const what = errors.some((e) => e.message.startsWith('YAML syntax error')) ? 'YAML syntax error' : 'unreadable document';
  return `${what} in ${files}; change rejected${kept}`;
}

/**
 * Reads, parses and decodes every manifest of one cluster. Never throws.
 *
 * `previous` is the files' content of the last good read; without it (the
 * initial load) a structurally unreadable file fails the whole read. With it,
 * such a file's change is rejected alone: its previous content (or nothing, for
 * a new file) is used and the rejection comes back with the state. Objects
 * that are semantically invalid are left out and listed in the state's errors.
 * A file larger than `maxFileBytes` (manifests.maxFileBytes) rejects the change, naming
 * it, before it is read.
 */
export async function readClusterManifests(cluster: string, paths: readonly string[], previous?: FileCache, maxFileBytes = Infinity): Promise<ClusterRead> {
  let listing: ManifestListing;
  try {
    listing = await listManifestFiles(paths);
  } catch (e) {
    const msg = e instanceof ManifestReadError ? e.message : String(e);
    return { type: 'error', error: sourceError(cluster, 'read', `cannot read manifests: ${msg}`, []) };
  }

  const texts: string[] = [];
  for (const file of listing.files) {
    try {
      const tooLarge = (size: number) => `cannot read manifests: ${file} is ${size} bytes, over the limit of ${maxFileBytes} (manifests.maxFileBytes); change rejected`;
      const size = (await stat(file)).size;
      if (size > maxFileBytes) return { type: 'error', error: sourceError(cluster, 'read', tooLarge(size), []), listing };
      const bytes = await readFile(file);
      // The file may have grown since stat().
      if (bytes.length > maxFileBytes) return { type: 'error', error: sourceError(cluster, 'read', tooLarge(bytes.length), []), listing };
      texts.push(bytes.toString('utf8'));
    } catch (e) {
      if (errnoCode(e) === 'ENOENT') return { type: 'vanished', listing };
      return { type: 'error', error: sourceError(cluster, 'read', `cannot read manifests: ${describeErrno(file, e)}`, []), listing };
    }
  }

  const files = new Map<string, FileContent>();
  const used: FileContent[] = [];
  const unreadable: FieldError[] = [];
  const revision = createHash('sha256');
  const rejectedKey = createHash('sha256');
  listing.files.forEach((file, i) => {
    const before = previous?.get(file);
    const read = readFileContent(file, texts[i] ?? '', before);
    let content: FileContent | undefined;
    if (read.type === 'ok') {
      content = read.content;
    } else {
      unreadable.push(...read.errors);
      rejectedKey.update(file).update('\0').update(read.hash).update('\0');
      content = before;
    }
    if (content === undefined) return;
    files.set(file, content);
    used.push(content);
    revision.update(file).update('\0').update(content.hash).update('\0');
  });

  if (unreadable.length > 0 && previous === undefined) {
    return { type: 'error', error: sourceError(cluster, 'parse', unreadableSummary(unreadable, ''), unreadable), listing };
  }
  const { objects, errors } = assembleObjects(used);
  const state: ClusterState = { cluster, objects, errors, stale: false, revision: revision.digest('hex') };
  if (unreadable.length === 0) return { type: 'ok', state, listing, files };
  const rejected = sourceError(cluster, 'parse', unreadableSummary(unreadable, '; the last good version of each file keeps serving'), unreadable);
  return { type: 'ok', state, listing, files, rejected, rejectedKey: rejectedKey.digest('hex') };
}
