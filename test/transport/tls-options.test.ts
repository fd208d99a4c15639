import { describe, expect, it } from 'vitest';
import { identityHostFor, serverNameFor } from '../../src/transport/tls-options.js';
import { overrideTarget as target } from '../helpers/epp-target.js';

describe('serverNameFor', () => {
  it('uses serverName, else the Service DNS name for an IP host (never an IP as SNI), else none', () => {
    expect(serverNameFor(target('10.0.0.1:9002', { enabled: true, serverName: 'epp.example' }))).toBe('epp.example');
    expect(serverNameFor(target('10.0.0.1:9002', { enabled: true }))).toBe('epp.ns.svc');
    expect(serverNameFor(target('10.0.0.1:9002', { enabled: true, insecureSkipVerify: false }))).toBe('epp.ns.svc');
    expect(serverNameFor(target('10.0.0.1:9002', { enabled: true, caFile: '/ca.pem' }))).toBe('epp.ns.svc');
    expect(serverNameFor({ ...target('[::1]:9002', { enabled: true, caFile: '/ca.pem' }), host: '[::1]' })).toBe('epp.ns.svc');
    expect(serverNameFor({ ...target('epp.example:9002', { enabled: true }), host: 'epp.example' })).toBeUndefined();
    expect(serverNameFor(target('10.0.0.1:9002'))).toBeUndefined();
  });
});

describe('identityHostFor', () => {
  it('a verified IP host without serverName is verified as that IP; otherwise the SNI is the name verified', () => {
    expect(identityHostFor(target('10.0.0.1:9002', { enabled: true, caFile: '/ca.pem' }))).toBe('10.0.0.1');
    expect(identityHostFor(target('10.0.0.1:9002', { enabled: true, insecureSkipVerify: false }))).toBe('10.0.0.1');
    expect(identityHostFor({ ...target('[::1]:9002', { enabled: true, caFile: '/ca.pem' }), host: '[::1]' })).toBe('::1');
    expect(identityHostFor(target('10.0.0.1:9002', { enabled: true, caFile: '/ca.pem', serverName: 'epp.example' }))).toBeUndefined();
    expect(identityHostFor({ ...target('epp.example:9002', { enabled: true, caFile: '/ca.pem' }), host: 'epp.example' })).toBeUndefined();
    expect(identityHostFor(target('10.0.0.1:9002', { enabled: true }))).toBeUndefined(); // nothing verified
    expect(identityHostFor(target('10.0.0.1:9002'))).toBeUndefined();
  });
});
