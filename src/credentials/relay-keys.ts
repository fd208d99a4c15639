/**
 * The relay key file: the HMAC keys routers sign relay tokens with and relays
 * verify them with (relay-token.ts), one base64 key per line, at least
 * {@link MIN_RELAY_KEY_BYTES} bytes each once decoded; blank lines and `#`
 * comments are ignored. The first key signs, every key verifies: to rotate,
 * add the new key as the second line, then move it first, then drop the old one.
 *
 * Read through CredentialFiles, so a changed Secret is picked up without a
 * restart: each call parses only when the file's content changed since the
 * last call (an identity check otherwise). A first read that fails throws
 * (the router does not start without keys); a later content that does not
 * parse keeps the last good keys, and relayKeyFileProblem() says why. Errors
 * name the file and the line, never a key.
 */
import type { CredentialFiles } from './credential-files.js';
import { MIN_RELAY_KEY_BYTES, type RelayKeys } from './relay-token.js';

export class RelayKeyError extends Error {
  override readonly name = 'RelayKeyError';
}

interface Parsed {
  /** The file content these keys (or this problem) were parsed from. */
  content: Buffer;
  /** The last good keys. */
  keys: RelayKeys;
  /** Why the current content was refused (the last good keys serve meanwhile). */
  problem: string | undefined;
}

const BASE64 = /^(?:[A-Za-z0-9+/]+={0,2}|[A-Za-z0-9_-]+)$/;

/** Keys of a key file's content; throws RelayKeyError naming `path` and the line. */
export function parseRelayKeys(path: string, content: string): RelayKeys {
  const keys: Buffer[] = [];
  const lines = content.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === '' || line.startsWith('#')) continue;
    const at = `relay key file ${path} line ${i + 1}`;
    if (!BASE64.test(line) || line.replace(/=+$/, '').length % 4 === 1) throw new RelayKeyError(`${at}: not a base64 key`);
    const key = Buffer.from(line, line.includes('-') || line.includes('_') ? 'base64url' : 'base64');
    if (key.length < MIN_RELAY_KEY_BYTES) {
      throw new RelayKeyError(`${at}: the key decodes to ${key.length} bytes, at least ${MIN_RELAY_KEY_BYTES} are needed (e.g. \`openssl rand -base64 32\`)`);
    }
    keys.push(key);
  }
  if (keys.length === 0) throw new RelayKeyError(`relay key file ${path}: no key (one base64 key per line; # comments and blank lines are ignored)`);
  return { keys };
}

const parsedByFiles = new WeakMap<CredentialFiles, Map<string, Parsed>>();

/**
 * The keys in `path`, as `files` currently holds it. Cheap when nothing changed
 * (called per token). Throws RelayKeyError when the file cannot be read or
 * parsed and no good keys were read from it before.
 */
export function readRelayKeys(files: CredentialFiles, path: string): RelayKeys {
  let byPath = parsedByFiles.get(files);
  if (byPath === undefined) parsedByFiles.set(files, (byPath = new Map()));
  const known = byPath.get(path);
  let content: Buffer;
  try {
    content = files.read(path);
  } catch (err) {
    throw new RelayKeyError(`cannot read relay key file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  if (known !== undefined && known.content === content) return known.keys;
  try {
    const keys = parseRelayKeys(path, content.toString('utf8'));
    byPath.set(path, { content, keys, problem: undefined });
    return keys;
  } catch (err) {
    if (known === undefined) throw err;
    known.content = content;
    known.problem = (err as Error).message;
    return known.keys;
  }
}

/** Why the current content of `path` was refused (the last good keys are in use), or undefined. */
export function relayKeyFileProblem(files: CredentialFiles, path: string): string | undefined {
  return parsedByFiles.get(files)?.get(path)?.problem;
}

/**
 * A key source for RelaySigner: {@link readRelayKeys} (throws at once when the file has no good
 * keys), telling `onProblem` once each time a changed file is refused and the last good keys stay.
 */
export function relayKeySource(files: CredentialFiles, path: string, onProblem: (problem: string) => void): () => RelayKeys {
  readRelayKeys(files, path);
  let told: string | undefined;
  return () => {
    const keys = readRelayKeys(files, path);
    const problem = relayKeyFileProblem(files, path);
    if (problem !== undefined && problem !== told) onProblem(problem);
    told = problem;
    return keys;
  };
}
