import { describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { CONFIG_ENV, parseCli, USAGE } from '../../src/cli/args.js';

describe('parseCli', () => {
  it('runs with --config', () => {
    expect(parseCli(['--config', 'r.yaml'], {})).toEqual({ type: 'run', configFile: 'r.yaml' });
    expect(parseCli(['-c', 'r.yaml', '--check'], {})).toEqual({ type: 'check', configFile: 'r.yaml' });
  });

  it('--export-controller runs only the export controller; it does not combine with --check', () => {
    expect(parseCli(['--export-controller', '-c', 'r.yaml'], {})).toEqual({ type: 'export-controller', configFile: 'r.yaml' });
    expect(parseCli(['--export-controller', '--check', '-c', 'r.yaml'], {})).toMatchObject({ type: 'usage-error', message: expect.stringContaining('--export-controller') });
  });

  it('--export-agent runs only the push/pull member agent; it combines with neither --check nor --export-controller', () => {
    expect(parseCli(['--export-agent', '-c', 'r.yaml'], {})).toEqual({ type: 'export-agent', configFile: 'r.yaml' });
    expect(parseCli(['--export-agent', '--export-controller', '-c', 'r.yaml'], {})).toMatchObject({ type: 'usage-error', message: '--export-controller and --export-agent cannot be combined' });
    expect(parseCli(['--export-agent', '--check', '-c', 'r.yaml'], {})).toMatchObject({ type: 'usage-error', message: expect.stringContaining('--export-agent') });
    expect(USAGE).toContain('--export-agent');
  });

  it('falls back to the config env var, and the flag wins over it', () => {
    expect(parseCli([], { [CONFIG_ENV]: '/etc/mcip/router.yaml' })).toEqual({ type: 'run', configFile: '/etc/mcip/router.yaml' });
    expect(parseCli(['--config', 'flag.yaml'], { [CONFIG_ENV]: 'env.yaml' })).toMatchObject({ configFile: 'flag.yaml' });
  });

  it('answers help and version before needing a config', () => {
    expect(parseCli(['--help'], {})).toEqual({ type: 'help' });
    expect(parseCli(['-v'], {})).toEqual({ type: 'version' });
  });

  it('reports a missing config, unknown flags, positionals and bad log levels as usage errors', () => {
    expect(parseCli([], {})).toMatchObject({ type: 'usage-error', message: expect.stringContaining(CONFIG_ENV) });
    expect(parseCli(['--confg', 'x'], {})).toMatchObject({ type: 'usage-error', message: expect.stringContaining('--confg') });
    expect(parseCli(['--config', 'x', 'extra'], {})).toMatchObject({ type: 'usage-error' });
    expect(parseCli(['--config', 'x', '--log-level', 'loud'], {})).toMatchObject({
      type: 'usage-error',
      message: expect.stringContaining('loud'),
    });
    expect(parseCli(['--config', 'x', '--log-level', 'debug'], {})).toEqual({ type: 'run', configFile: 'x', logLevel: 'debug' });
  });

  it('--help describes both deployment shapes, naming the config keys and the guide of each', () => {
    expect(USAGE).toMatch(/with its own Envoy\s+Envoy calls listen\.extProc/);
    expect(USAGE).toMatch(/behind your gateway\s+Istio, agentgateway, NGINX Gateway Fabric, Envoy AI\s+Gateway or kgateway/);
    expect(USAGE).toContain('endpointPicker.ports');
    const guide = /\((docs\/[a-z-]+\.md)\)/.exec(USAGE)![1]!;
    expect(existsSync(new URL(`../../${guide}`, import.meta.url))).toBe(true);
  });
});
