/**
 * CA, certificate, key and token files, read once and then watched: a timer
 * stats every file read so far (asynchronously, off the request path) and
 * re-reads the ones whose inode, size or mtime changed (a Kubernetes Secret
 * volume swaps a symlink, so the inode changes). `generation` counts content
 * changes: a holder of material built from these files compares it with the
 * generation it was built at, an integer comparison, and rebuilds when it moved.
 */
import { readFileSync, statSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';

interface Entry {
  content: Buffer;
  stamp: string;
}

export interface CredentialFilesOptions {
  /** How often files are checked for changes; 0: read once, never re-read. */
  readonly pollIntervalMs: number;
}

const stampOf = (st: { ino: number; size: number; mtimeMs: number }): string => `${st.ino}:${st.size}:${st.mtimeMs}`;

export class CredentialFiles {
  private readonly files = new Map<string, Entry>();
  private timer: NodeJS.Timeout | undefined;
  private polling = false;
  private closed = false;
  /** Incremented whenever the content of a watched file changes. */
  generation = 0;

  constructor(private readonly options: CredentialFilesOptions) {}

  /**
   * The file's content: read synchronously the first time (when a channel or a
   * scrape client is first built), from the cache afterwards. Throws the read error.
   */
  read(path: string): Buffer {
    const known = this.files.get(path);
    if (known) return known.content;
    const stamp = stampOf(statSync(path));
    const content = readFileSync(path);
    this.files.set(path, { content, stamp });
    this.startPolling();
    return content;
  }

  /**
   * True when every file in `material` (path -> the Buffer read() returned) still has
   * that content. A file that cannot be read now counts as unchanged: the last good
   * material stays in use. Cheap when nothing changed since `generation`.
   */
  unchanged(material: ReadonlyMap<string, Buffer>): boolean {
    for (const [path, content] of material) {
      const known = this.files.get(path);
      if (known !== undefined && known.content !== content) return false;
    }
    return true;
  }

  /** A read() that records what it returned, for unchanged(). */
  recorder(): { readonly read: (path: string) => Buffer; readonly material: Map<string, Buffer> } {
    const material = new Map<string, Buffer>();
    return {
      material,
      read: (path) => {
        const content = this.read(path);
        material.set(path, content);
        return content;
      },
    };
  }

  /** Checks every watched file once; resolves when done. Exposed for tests and for an immediate re-check. */
  async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      for (const [path, entry] of this.files) {
        try {
          const stamp = stampOf(await stat(path));
          if (stamp === entry.stamp) continue;
          const content = await readFile(path);
          entry.stamp = stamp;
          if (!content.equals(entry.content)) {
            entry.content = content;
            this.generation += 1;
          }
        } catch {
          // Mid-rotation (a file briefly missing) or removed: keep the last good content.
        }
      }
    } finally {
      this.polling = false;
    }
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private startPolling(): void {
    if (this.timer || this.closed || this.options.pollIntervalMs <= 0) return;
    this.timer = setInterval(() => void this.poll(), this.options.pollIntervalMs);
    this.timer.unref();
  }
}
