import { mkdtempSync, writeFileSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CredentialFiles } from '../../src/credentials/credential-files.js';
import { parseRelayKeys, readRelayKeys, relayKeySource } from '../../src/credentials/relay-keys.js';

const k1 = Buffer.alloc(32, 1);
const k2 = Buffer.alloc(48, 2);
const files = new CredentialFiles({ pollIntervalMs: 0 });
afterEach(() => files.close());

function keyFile(text: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'relay-keys-')), 'key');
  writeFileSync(path, text);
  return path;
}

describe('relay key files', () => {
  it('reads one base64 key per line in order (the first signs), skipping blanks and comments', () => {
    const path = keyFile(`# current first\n${k1.toString('base64')}\n\n${k2.toString('base64url')}\n`);
    expect(readRelayKeys(files, path).keys).toEqual([k1, k2]);
  });

  it.each([
    ['a short key', Buffer.alloc(31).toString('base64'), /line 1: a key must be at least 32 bytes, this one is 31/],
    ['text that is not base64', 'not base64!', /line 1: not base64/],
    ['no key at all', '# nothing\n', /holds no key/],
  ])('refuses %s, naming the file and line', (_w, text, message) => {
    expect(() => parseRelayKeys(text, '/etc/mcip/relay/key')).toThrow(message);
  });

  it('re-reads the file when it changes, keeping the last good keys when the change does not parse', async () => {
    const path = keyFile(`${k1.toString('base64')}\n`);
    const errors: string[] = [];
    const source = relayKeySource(files, path, (e) => errors.push(e.message));
    expect(source().keys).toEqual([k1]);
    writeFileSync(`${path}.new`, `${k2.toString('base64')}\n${k1.toString('base64')}\n`);
    renameSync(`${path}.new`, path);
    await files.poll();
    expect(source().keys).toEqual([k2, k1]);
    writeFileSync(`${path}.new`, 'short\n');
    renameSync(`${path}.new`, path);
    await files.poll();
    expect(source().keys).toEqual([k2, k1]);
    expect(errors).toEqual([expect.stringMatching(/a key must be at least 32 bytes/)]);
  });
});
