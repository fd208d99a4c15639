// The eppAnswers and stream-bound settings as the config file spells them: defaults, and
// clear errors naming the field for bad CIDRs, header names and bounds.
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { configIssues } from './config-issues.js';
import { DEFAULT_DENIED_DESTINATIONS, DEFAULT_EPP_HEADERS } from '../../src/config/schema.js';

const config = (clusterExtra: string, extProc = '') => `
clusterName: a
gateways: [{namespace: default, name: gw}]
clusters:
  - name: a
    manifests: {paths: [m]}
${clusterExtra}
${extProc}
`;

const issues = configIssues;

describe('eppAnswers and stream bounds', () => {
  it('default to every address but the denied ranges, the documented headers, and the bounds', () => {
    const cfg = parseConfigText(config(''), 'config.yaml', '/base');
    expect(cfg.clusters[0]!.eppAnswers).toEqual({
      destinations: { allow: ['0.0.0.0/0', '::/0'], deny: [...DEFAULT_DENIED_DESTINATIONS] },
      headers: [...DEFAULT_EPP_HEADERS],
    });
    expect(DEFAULT_DENIED_DESTINATIONS).toEqual(expect.arrayContaining(['127.0.0.0/8', '::1/128', '169.254.0.0/16', 'fe80::/10', '0.0.0.0/8', '::/96', '64:ff9b::/96', '224.0.0.0/4', 'ff00::/8']));
    expect(cfg.extProc).toMatchObject({ maxStreams: 10_000, firstMessageTimeoutMs: 10_000, maxHeldBytesPerStream: 32 * 1024 * 1024, heldBytesBudget: 256 * 1024 * 1024 });
  });

  it('takes CIDRs of both families and lower-case header names', () => {
    const cfg = parseConfigText(
      config('    eppAnswers: {destinations: {allow: [10.0.0.0/8, "fd00::/8"], deny: []}, headers: [x-gateway-destination-endpoint]}'),
      'config.yaml',
      '/base',
    );
    expect(cfg.clusters[0]!.eppAnswers.destinations).toEqual({ allow: ['10.0.0.0/8', 'fd00::/8'], deny: [] });
  });

  it('names the field of every bad value', () => {
    expect(
      issues(
        config(
          '    eppAnswers: {destinations: {allow: [10.0.0.0/33, "fd00::/129", 10.0.0.0], deny: [example.com/8]}, headers: [Authorization], extra: 1}',
          'extProc: {maxStreams: 0, firstMessageTimeoutMs: 0, heldBytesBudget: 10}',
        ),
      ),
    ).toEqual([
      expect.stringMatching(/^clusters\[0\]\.eppAnswers\.destinations\.allow\[0\]: must be a CIDR/),
      expect.stringMatching(/^clusters\[0\]\.eppAnswers\.destinations\.allow\[1\]: must be a CIDR/),
      expect.stringMatching(/^clusters\[0\]\.eppAnswers\.destinations\.allow\[2\]: must be a CIDR/),
      expect.stringMatching(/^clusters\[0\]\.eppAnswers\.destinations\.deny\[0\]: must be a CIDR/),
      expect.stringMatching(/^clusters\[0\]\.eppAnswers\.headers\[0\]: must be a lower-case HTTP header name/),
      "clusters[0].eppAnswers.extra: unknown key",
      expect.stringMatching(/^extProc\.maxStreams: /),
      expect.stringMatching(/^extProc\.firstMessageTimeoutMs: /),
      expect.stringMatching(/^extProc\.heldBytesBudget: /),
    ]);
  });
});
