import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FLEET_CHECK_ONLY, main } from '../../src/main.js';

afterEach(() => vi.restoreAllMocks());

describe('serving with fleet.clusterProfiles', () => {
  it('refuses to start (exit 2) rather than serve without the members the config names', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mcip-fleet-serve-'));
    const config = join(dir, 'router.yaml');
    writeFileSync(
      config,
      [
        'clusterName: local',
        'gateways: [{namespace: default, name: gw}]',
        'clusters: [{name: local, manifests: {paths: [.]}}]',
        'fleet: {clusterProfiles: {namespace: fleet-system, providerFile: providers.json}}',
      ].join('\n'),
    );
    const stderr: string[] = [];
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
      stderr.push(String(chunk));
      return true;
    });
    for (const flags of [[], ['--export-controller']]) {
      stderr.length = 0;
      expect(await main(['--config', config, ...flags])).toBe(2);
      expect(stderr.join('')).toBe(`mcip-router: cannot start: ${FLEET_CHECK_ONLY}\n`);
    }
  });
});
