import { randomBytes } from 'node:crypto';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CredentialFiles } from '../../src/credentials/credential-files.js';
import { parseRelayKeys, readRelayKeys, relayKeyFileProblem, RelayKeyError, relayKeySource } from '../../src/credentials/relay-keys.js';

const k1 = randomBytes(32);
const k2 = randomBytes(48);
let dir: string;
let files: CredentialFiles;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'relay-keys-'));
  files = new CredentialFiles({ pollIntervalMs: 0 });
});
afterEach(() => {
  files.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Replaces the file the way a Secret volume does: a new inode. */
function swap(path: string, text: string): void {
  writeFileSync(`${path}.new`, text);
  renameSync(`${path}.new`, path);
}

describe('relay key file', () => {
  it('reads one base64 key per line, skipping blank lines and comments, first key first', () => {
    const keys = parseRelayKeys('/k', `# signing key\n${k1.toString('base64')}\n\n  ${k2.toString('base64url')}  \r\n# old\n`);
    expect(keys.keys).toEqual([k1, k2]);
  });

  it('names the file and line of a bad key, never the key', () => {
    const short = randomBytes(16).toString('base64');
    const bad = () => parseRelayKeys('/etc/mcip/relay/key', `# c\n${k1.toString('base64')}\n${short}\n`);
    expect(bad).toThrow(RelayKeyError);
    expect(bad).toThrow('relay key file /etc/mcip/relay/key line 3: the key decodes to 16 bytes, at least 32 are needed');
    try {
      bad();
    } catch (err) {
      expect((err as Error).message).not.toContain(short);
    }
    expect(() => parseRelayKeys('/k', 'not base64 at all!\n')).toThrow('relay key file /k line 1: not a base64 key');
    expect(() => parseRelayKeys('/k', '# only a comment\n\n')).toThrow('relay key file /k: no key');
  });

  it('picks up a changed file without a restart, and keeps the last good keys when the new content is bad', async () => {
    const path = join(dir, 'key');
    writeFileSync(path, `${k1.toString('base64')}\n`);
    const first = readRelayKeys(files, path);
    expect(first.keys).toEqual([k1]);
    expect(readRelayKeys(files, path)).toBe(first); // unchanged: no parse, the same object

    swap(path, `${k2.toString('base64')}\n${k1.toString('base64')}\n`);
    await files.poll();
    expect(readRelayKeys(files, path).keys).toEqual([k2, k1]);
    expect(relayKeyFileProblem(files, path)).toBeUndefined();

    swap(path, 'c2hvcnQ=\n');
    await files.poll();
    expect(readRelayKeys(files, path).keys).toEqual([k2, k1]);
    expect(relayKeyFileProblem(files, path)).toMatch(/line 1: the key decodes to 5 bytes/);

    swap(path, `${k1.toString('base64')}\n`);
    await files.poll();
    expect(readRelayKeys(files, path).keys).toEqual([k1]);
    expect(relayKeyFileProblem(files, path)).toBeUndefined();
  });

  it('refuses to start from a missing or bad file', () => {
    expect(() => readRelayKeys(files, join(dir, 'absent'))).toThrow(/cannot read relay key file .*absent: ENOENT/);
    const path = join(dir, 'key');
    writeFileSync(path, 'c2hvcnQ=\n');
    expect(() => readRelayKeys(files, path)).toThrow(/relay key file .*key line 1/);
  });
});

describe('relay key source (the signing side)', () => {
  const signerFiles = new CredentialFiles({ pollIntervalMs: 0 });
  afterEach(() => signerFiles.close());

  it('follows the file, keeps the last good keys when a change does not parse, and says so once', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'relay-source-')), 'key');
    writeFileSync(path, `${k1.toString('base64')}\n`);
    const problems: string[] = [];
    const source = relayKeySource(signerFiles, path, (p) => problems.push(p));
    expect(source().keys).toEqual([k1]);
    writeFileSync(`${path}.new`, `${k2.toString('base64')}\n${k1.toString('base64')}\n`);
    renameSync(`${path}.new`, path);
    await signerFiles.poll();
    expect(source().keys).toEqual([k2, k1]);
    writeFileSync(`${path}.new`, 'short\n');
    renameSync(`${path}.new`, path);
    await signerFiles.poll();
    expect(source().keys).toEqual([k2, k1]);
    expect(source().keys).toEqual([k2, k1]);
    expect(problems).toEqual([expect.stringMatching(/line 1: not a base64 key/)]);
    expect(() => relayKeySource(signerFiles, join(tmpdir(), 'no-such-relay-key'), () => {})).toThrow(/cannot read relay key file/);
  });
});
