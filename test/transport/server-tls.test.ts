import { describe, expect, it } from 'vitest';
import { pickerTlsSchema } from '../../src/config/picker-tls-schema.js';
import { serverTlsFromConfig, serviceDnsNames } from '../../src/transport/server-tls.js';

const o = { pollIntervalMs: 750, dnsNames: serviceDnsNames('mcip-router', 'llm') };

describe('serverTlsFromConfig (endpointPicker.tls)', () => {
  it('files when given, plaintext when asked, else self-signed for the Service names', () => {
    expect(serverTlsFromConfig(pickerTlsSchema.parse({ certFile: '/t/c', keyFile: '/t/k' }), o)).toEqual({ kind: 'files', certFile: '/t/c', keyFile: '/t/k', pollIntervalMs: 750 });
    expect(serverTlsFromConfig(pickerTlsSchema.parse({ plaintext: true }), o)).toEqual({ kind: 'plaintext' });
    expect(serverTlsFromConfig(pickerTlsSchema.parse({}), o)).toEqual({
      kind: 'self-signed',
      dnsNames: ['mcip-router', 'mcip-router.llm', 'mcip-router.llm.svc', 'mcip-router.llm.svc.cluster.local'],
    });
  });
});
