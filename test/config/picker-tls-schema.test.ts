import { describe, expect, it } from 'vitest';
import { pickerTlsSchema } from '../../src/config/picker-tls-schema.js';

const issues = (input: unknown): string[] => {
  const r = pickerTlsSchema.safeParse(input);
  return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
};

describe('endpointPicker.tls schema fragment', () => {
  it('defaults to TLS (no files: self-signed), plaintext only when asked', () => {
    expect(pickerTlsSchema.parse({})).toEqual({ plaintext: false });
    expect(pickerTlsSchema.parse({ plaintext: true })).toEqual({ plaintext: true });
    expect(pickerTlsSchema.parse({ certFile: '/t/tls.crt', keyFile: '/t/tls.key' })).toEqual({ certFile: '/t/tls.crt', keyFile: '/t/tls.key', plaintext: false });
  });

  it('certFile and keyFile come together, naming the missing one', () => {
    expect(issues({ certFile: '/t/tls.crt' })).toEqual(['keyFile: certFile and keyFile are set together (the certificate and its key)']);
    expect(issues({ keyFile: '/t/tls.key' })).toEqual(['certFile: certFile and keyFile are set together (the certificate and its key)']);
  });

  it('plaintext with files is refused; unknown keys too', () => {
    expect(issues({ certFile: '/a', keyFile: '/b', plaintext: true })).toEqual([
      'plaintext: plaintext: true serves no TLS: remove certFile and keyFile, or plaintext',
    ]);
    expect(issues({ caFile: '/c' })).toHaveLength(1);
    expect(issues({ certFile: '' , keyFile: '/b' }).length).toBeGreaterThan(0);
  });
});
