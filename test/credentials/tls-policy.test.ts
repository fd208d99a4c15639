import { describe, expect, it } from 'vitest';
import { channelCredentials } from '../../src/credentials/tls-policy.js';

describe('channelCredentials', () => {
  const read = (p: string): Buffer => {
    throw new Error(`ENOENT ${p}`);
  };
  it('plaintext and skip-verify need no files', () => {
    expect(channelCredentials({ enabled: false, insecureSkipVerify: true }, read)._isSecure()).toBe(false);
    expect(channelCredentials({ enabled: true, insecureSkipVerify: true }, read)._isSecure()).toBe(true);
  });
  it('a client certificate needs both files', () => {
    expect(() => channelCredentials({ enabled: true, insecureSkipVerify: true, certFile: '/c.pem' }, read)).toThrow(/set together/);
  });
  it('an unreadable file is an error naming it', () => {
    expect(() => channelCredentials({ enabled: true, insecureSkipVerify: false, caFile: '/missing.pem' }, read)).toThrow(
      'EPP TLS: cannot read caFile /missing.pem: ENOENT /missing.pem',
    );
  });
});
