import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { configIssues } from './config-issues.js';

const BASE = 'clusterName: a\nclusters: [{name: a, manifests: {paths: [m]}}]\n';

const issues = configIssues;

describe('endpointPicker', () => {
  it('is off by default, with its defaults in the schema', () => {
    const cfg = parseConfigText(`${BASE}gateways: [{namespace: default, name: gw}]\n`, 'config.yaml', '/base');
    expect(cfg.endpointPicker).toEqual({
      address: '0.0.0.0',
      ports: [],
      defaultAnswer: 'relay',
      tls: { plaintext: false },
      relay: { port: 8443, tokenTtlMs: 10_000, maxSkewMs: 2000, maxNonces: 100_000 },
    });
  });

  it('serves without any Gateway when picker ports are set, and resolves the relay key file against the config', () => {
    const cfg = parseConfigText(`${BASE}endpointPicker: {namespace: llm, serviceName: mcip-router, ports: [9100], relay: {keyFile: keys/relay}}\n`, 'config.yaml', '/base');
    expect(cfg.gateways).toEqual([]);
    expect(cfg.endpointPicker.relay.keyFile).toBe('/base/keys/relay');
  });

  it('needs a Gateway or picker ports', () => {
    expect(issues(BASE)).toEqual([expect.stringMatching(/^gateways: list at least one Gateway to serve, or set endpointPicker\.ports/)]);
  });

  it('needs namespace and serviceName with ports, and refuses duplicate ports', () => {
    expect(issues(`${BASE}endpointPicker: {ports: [9100, 9100]}\n`)).toEqual([
      expect.stringMatching(/^endpointPicker\.namespace: required when endpointPicker\.ports is set/),
      expect.stringMatching(/^endpointPicker\.serviceName: required when endpointPicker\.ports is set/),
      'endpointPicker.ports[1]: duplicate picker port 9100',
    ]);
  });

  it('refuses a picker port that collides with listen.extProc on an overlapping host, naming both fields', () => {
    const picker = 'endpointPicker: {namespace: llm, serviceName: mcip-router, ports: [9002]}\n';
    expect(issues(`${BASE}${picker}`)).toEqual([
      'endpointPicker.ports: picker port 9002 on 0.0.0.0 collides with listen.extProc 127.0.0.1:9002: move one of them (endpointPicker.ports, listen.extProc)',
    ]);
    expect(issues(`${BASE}${picker}listen: {extProc: '127.0.0.1:9003'}\n`)).toEqual([]);
    expect(issues(`${BASE}endpointPicker: {namespace: llm, serviceName: r, address: 10.0.0.1, ports: [9002]}\n`)).toEqual([]);
  });

  it('takes a certificate with its key, or plaintext, not both', () => {
    expect(issues(`${BASE}endpointPicker: {tls: {certFile: c}}\n`.replace('endpointPicker', 'gateways: [{namespace: d, name: g}]\nendpointPicker'))).toEqual([
      'endpointPicker.tls.keyFile: certFile and keyFile are set together (the certificate and its key)',
    ]);
    expect(issues(`${BASE}gateways: [{namespace: d, name: g}]\nendpointPicker: {tls: {certFile: c, keyFile: k, plaintext: true}}\n`)).toEqual([
      'endpointPicker.tls.plaintext: plaintext: true serves no TLS: remove certFile and keyFile, or plaintext',
    ]);
  });
});
