/**
 * ManifestSource: one ClusterSet member's objects from manifest files and
 * directories, watched for changes.
 *
 * Change detection has two layers: fs.watch on every directory involved (the
 * parent directory for configured files, so editor rename-swaps and ConfigMap
 * "..data" symlink swaps are seen), and a cheap poll (stat of every known file
 * and directory: inode, size, mtime) as a fallback for events fs.watch misses.
 * Any change, after a debounce, re-reads everything. An object with a
 * semantic problem is left out (listed in the state's errors); a file that is
 * structurally unreadable keeps its last good version and the state carries the
 * rejection (see manifest-documents.ts). When the files are good again the
 * source says so, even if their content is byte for byte the last good one.
 */
import type { FSWatcher } from 'node:fs';
import { watch } from 'node:fs';
import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Logger } from 'pino';
import type { FileCache } from './manifest-documents.js';
import type { ClusterRead, ManifestListing } from './manifest-files.js';
import { readClusterManifests } from './manifest-files.js';
import type { ClusterState, ObjectSource, SourceError, SourceListener } from './types.js';

export interface ManifestSourceOptions {
  readonly cluster: string;
  /** Files or directories (absolute, or relative to the process cwd). */
  readonly paths: readonly string[];
  readonly debounceMs: number;
  readonly pollIntervalMs: number;
  /** Larger manifest files are rejected (manifests.maxFileBytes); none when unset. */
  readonly maxFileBytes?: number;
  readonly logger?: Logger;
}

/** The error start() rejects with. It is itself a SourceError (cluster, reason, message, errors). */
export class ManifestSourceError extends Error implements SourceError {
  override readonly name = 'ManifestSourceError';
  readonly cluster: string;
  readonly reason: SourceError['reason'];
  readonly errors: SourceError['errors'];
  constructor(readonly sourceError: SourceError) {
    super(sourceError.message);
    this.cluster = sourceError.cluster;
    this.reason = sourceError.reason;
    this.errors = sourceError.errors;
  }
}

const vanishedError = (cluster: string): SourceError => ({
  cluster,
  reason: 'read',
  message: 'manifest files kept changing while being read',
  errors: [],
});

/** How often a read is retried when files vanish under it during the initial load. */
const VANISHED_RETRIES = 5;
const VANISHED_RETRY_MS = 50;

/** Longest a change may wait for events to settle (unless debounceMs itself is longer). */
const MAX_WAIT_MS = 1000;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** One-shot load for `--check`: never throws. */
export async function loadManifests(
  cluster: string,
  paths: readonly string[],
  maxFileBytes?: number,
): Promise<{ state?: ClusterState; error?: SourceError }> {
  const read = await readWithRetry(cluster, paths, maxFileBytes);
  if (read.type === 'ok') return { state: read.state };
  if (read.type === 'error') return { error: read.error };
  return { error: vanishedError(cluster) };
}

async function readWithRetry(cluster: string, paths: readonly string[], maxFileBytes?: number): Promise<ClusterRead> {
  let read = await readClusterManifests(cluster, paths, undefined, maxFileBytes);
  for (let i = 0; read.type === 'vanished' && i < VANISHED_RETRIES; i++) {
    await sleep(VANISHED_RETRY_MS);
    read = await readClusterManifests(cluster, paths, undefined, maxFileBytes);
  }
  return read;
}

export class ManifestSource implements ObjectSource {
  readonly cluster: string;
  private readonly paths: readonly string[];
  private readonly debounceMs: number;
  private readonly pollIntervalMs: number;
  private readonly maxFileBytes: number | undefined;
  private readonly log: Logger | undefined;

  private listener: SourceListener | undefined;
  private stopped = false;
  private started = false;
  private lastGood: ClusterState | undefined;
  private files: FileCache = new Map();
  /** Identifies the outstanding rejection, so the same one is not reported again on every event. */
  private lastErrorKey: string | undefined;
  private listing: ManifestListing = { files: [], dirs: [] };
  private readonly watchers = new Map<string, { readonly watcher: FSWatcher; readonly ino: number }>();
  private debounceTimer: NodeJS.Timeout | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private polling = false;
  private fingerprint = '';
  private reloading: Promise<void> | undefined;
  private reloadAgain = false;
  private pendingSince: number | undefined;
  private readonly maxWaitMs: number;

  constructor(opts: ManifestSourceOptions) {
    this.cluster = opts.cluster;
    this.paths = opts.paths.map((p) => resolve(p));
    this.maxFileBytes = opts.maxFileBytes;
    this.debounceMs = opts.debounceMs;
    this.pollIntervalMs = opts.pollIntervalMs;
    this.maxWaitMs = Math.max(opts.debounceMs, MAX_WAIT_MS);
    // The caller's logger is already bound to the cluster (src/runtime/load-sources.ts): bind only what is ours.
    this.log = opts.logger?.child({ source: 'manifests' });
  }

  /** The last state delivered to onState, if any. */
  get state(): ClusterState | undefined {
    return this.lastGood;
  }

  async start(listener: SourceListener): Promise<void> {
    if (this.started) throw new Error(`ManifestSource ${this.cluster}: already started`);
    this.started = true;
    this.listener = listener;
    const read = await readWithRetry(this.cluster, this.paths, this.maxFileBytes);
    if (read.type !== 'ok') {
      this.stopped = true;
      throw new ManifestSourceError(read.type === 'error' ? read.error : vanishedError(this.cluster));
    }
    if (this.stopped) return;
    this.listing = read.listing;
    this.files = read.files;
    this.lastGood = read.state;
    this.log?.info({ revision: read.state.revision, objects: read.state.objects.length, files: read.listing.files.length }, 'manifests loaded');
    listener.onState(read.state);
    await this.syncWatchers();
    this.fingerprint = await this.computeFingerprint();
    if (this.stopped) return;
    this.pollTimer = setInterval(() => void this.poll(), this.pollIntervalMs);
    this.pollTimer.unref();
  }

  async stop(): Promise<void> {
    if (!this.stopped) {
      this.stopped = true;
      clearTimeout(this.debounceTimer);
      clearInterval(this.pollTimer);
      for (const w of this.watchers.values()) w.watcher.close();
      this.watchers.clear();
    }
    await this.reloading;
  }

  /**
   * Schedules a re-read after the debounce. Events arriving meanwhile restart
   * the wait (so a file written in several steps is read once, complete), but
   * never past maxWaitMs from the first one, so a steady stream of events
   * cannot hold a change back.
   */
  private trigger(): void {
    if (this.stopped) return;
    const now = Date.now();
    this.pendingSince ??= now;
    const delay = Math.max(0, Math.min(this.debounceMs, this.pendingSince + this.maxWaitMs - now));
    clearTimeout(this.debounceTimer);
    this.debounceTimer = setTimeout(() => {
      this.pendingSince = undefined;
      this.runReload();
    }, delay);
    this.debounceTimer.unref();
  }

  private runReload(): void {
    if (this.stopped) return;
    if (this.reloading) {
      this.reloadAgain = true;
      return;
    }
    this.reloading = this.reload()
      .catch((e: unknown) => this.log?.error({ err: e }, 'manifest reload failed unexpectedly'))
      .finally(() => {
        this.reloading = undefined;
        if (this.reloadAgain) {
          this.reloadAgain = false;
          this.runReload();
        }
      });
  }

  private async reload(): Promise<void> {
    const read = await readClusterManifests(this.cluster, this.paths, this.files, this.maxFileBytes);
    if (this.stopped) return;
    if (read.listing) {
      this.listing = read.listing;
      await this.syncWatchers();
      if (this.stopped) return;
    }
    if (read.type === 'vanished') {
      this.trigger();
      return;
    }
    if (read.type === 'error') {
      // Nothing usable was read (a configured path is gone): the last good state keeps serving. Logged by the listener.
      const key = `${read.error.reason}:${read.revision ?? read.error.message}`;
      if (key === this.lastErrorKey) return;
      this.lastErrorKey = key;
      this.listener?.onError(read.error);
      return;
    }
    this.files = read.files;
    const errorKey = read.rejected ? `${read.rejected.reason}:${read.rejectedKey ?? read.rejected.message}` : undefined;
    const changed = read.state.revision !== this.lastGood?.revision;
    if (!changed && errorKey === this.lastErrorKey) return;
    this.lastErrorKey = errorKey;
    // Same content as the last good state (e.g. a bad edit restored byte for byte): deliver that very state, so the
    // listener sees nothing to rebuild, only that the rejection is over (or a new one).
    const base = changed || this.lastGood === undefined ? read.state : this.lastGood;
    const state: ClusterState = read.rejected ? { ...base, rejected: read.rejected } : base;
    this.lastGood = base;
    if (changed) {
      this.log?.info({ revision: state.revision, objects: state.objects.length, excluded: state.errors.length, files: read.listing.files.length }, 'manifests reloaded');
    }
    this.listener?.onState(state);
  }

  /**
   * Watches exactly the directories of the current listing plus the parents of
   * the configured paths. A directory that was replaced (new inode) gets a new
   * watcher, as the old one stays on the removed directory.
   */
  private async syncWatchers(): Promise<void> {
    const wanted = new Set([...this.listing.dirs, ...this.paths.map((p) => resolve(p, '..'))]);
    const inodes = new Map<string, number>();
    await Promise.all(
      [...wanted].map(async (dir) => {
        const st = await stat(dir).catch(() => undefined);
        if (st?.isDirectory()) inodes.set(dir, st.ino);
      }),
    );
    if (this.stopped) return;
    for (const [dir, w] of this.watchers) {
      if (inodes.get(dir) !== w.ino) {
        w.watcher.close();
        this.watchers.delete(dir);
      }
    }
    for (const [dir, ino] of inodes) {
      if (this.watchers.has(dir)) continue;
      try {
        const watcher = watch(dir, { persistent: false }, () => this.trigger());
        const entry = { watcher, ino };
        watcher.on('error', () => {
          // The directory went away or the watch broke: drop it and re-read; the next sync re-adds it.
          watcher.close();
          if (this.watchers.get(dir) === entry) this.watchers.delete(dir);
          this.trigger();
        });
        this.watchers.set(dir, entry);
      } catch (e) {
        // Missing right now (a deleted path): the poll notices when it comes back.
        this.log?.debug({ dir, err: e }, 'cannot watch directory');
      }
    }
  }

  /** inode/size/mtime of every configured path, known directory and known file. */
  private async computeFingerprint(): Promise<string> {
    const all = [...new Set([...this.paths, ...this.listing.dirs, ...this.listing.files])];
    const parts = await Promise.all(
      all.map(async (p) => {
        const st = await stat(p).catch(() => undefined);
        return st ? `${p}|${st.ino}|${st.size}|${st.mtimeMs}` : `${p}|-`;
      }),
    );
    return parts.join('\n');
  }

  private async poll(): Promise<void> {
    if (this.stopped || this.polling) return;
    this.polling = true;
    try {
      const fp = await this.computeFingerprint();
      if (this.stopped) return;
      if (fp !== this.fingerprint) {
        this.fingerprint = fp;
        this.log?.debug('manifest change detected by poll');
        this.trigger();
      }
    } finally {
      this.polling = false;
    }
  }
}
