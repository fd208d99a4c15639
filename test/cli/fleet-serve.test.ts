import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FLEET_NO_EXPORT, main } from '../../src/main.js';

afterEach(() => vi.restoreAllMocks());

describe('the export controller with fleet.clusterProfiles', () => {
  it('refuses to start (exit 2) rather than run without the members the profiles name', async () => {
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
    const inRouter = join(dir, 'router-exporting.yaml');
    writeFileSync(inRouter, `${readFileSync(config, 'utf8')}\nexportController: {enabled: true}\n`);
    const stderr: string[] = [];
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
      stderr.push(String(chunk));
      return true;
    });
    for (const args of [['--config', config, '--export-controller'], ['--config', inRouter]]) {
      stderr.length = 0;
      expect(await main(args)).toBe(2);
      expect(stderr.join('')).toBe(`mcip-router: cannot start: ${FLEET_NO_EXPORT}\n`);
    }
  });
});
