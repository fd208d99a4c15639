/**
 * Relay token keys from a file (a Secret volume): one base64 key per line, each at
 * least MIN_RELAY_KEY_BYTES decoded; blank lines and lines starting with # are
 * skipped. The first key signs, every key verifies (rotation: add the new key as a
 * second line everywhere, then move it first, then drop the old one).
 */
import type { CredentialFiles } from './credential-files.js';
import { MIN_RELAY_KEY_BYTES, type RelayKeys } from './relay-token.js';

const BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/;

/** Parses the keys file's text; throws naming the file and the line. */
export function parseRelayKeys(text: string, path: string): RelayKeys {
  const keys: Buffer[] = [];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === '' || line.startsWith('#')) continue;
    if (!BASE64.test(line)) throw new Error(`relay key file ${path}, line ${i + 1}: not base64`);
    const key = Buffer.from(line, line.includes('-') || line.includes('_') ? 'base64url' : 'base64');
    if (key.length < MIN_RELAY_KEY_BYTES) {
      throw new Error(`relay key file ${path}, line ${i + 1}: a key must be at least ${MIN_RELAY_KEY_BYTES} bytes, this one is ${key.length}`);
    }
    keys.push(key);
  }
  if (keys.length === 0) throw new Error(`relay key file ${path} holds no key`);
  return { keys };
}

/** The keys in `path`, read through `files` (cached, re-read when the file changes). Throws like {@link parseRelayKeys}, or the read error. */
export function readRelayKeys(files: CredentialFiles, path: string): RelayKeys {
  return parseRelayKeys(files.read(path).toString('utf8'), path);
}

/**
 * A key source for RelaySigner: the file's keys, parsed again only when its content
 * changed; a changed file that does not parse keeps the last good keys (`onError` is told).
 */
export function relayKeySource(files: CredentialFiles, path: string, onError: (err: Error) => void): () => RelayKeys {
  let content: Buffer | undefined;
  let keys = readRelayKeys(files, path);
  content = files.read(path);
  return () => {
    const now = files.read(path);
    if (now === content) return keys;
    content = now;
    try {
      keys = parseRelayKeys(now.toString('utf8'), path);
    } catch (err) {
      onError(err as Error);
    }
    return keys;
  };
}
