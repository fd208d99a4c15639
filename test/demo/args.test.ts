import { describe, expect, it } from 'vitest';
import { parseArgs } from '../../demo/args.js';
import { lastPort, layout, portsOf } from '../../demo/layout.js';

describe('demo flags', () => {
  it('defaults: the own-Envoy shape, front door on 8080, no load, no faults, runs until Ctrl-C', () => {
    expect(parseArgs([])).toEqual({
      type: 'run',
      options: { gateway: 'envoy', load: 0, faults: [], afterS: 10, forS: undefined, durationS: undefined, basePort: 8080, pods: 3, latencyMs: 40, verbose: false, noBuild: false },
    });
  });

  it('reads every flag, as "--flag value" or "--flag=value"', () => {
    const parsed = parseArgs(['--gateway', 'byo', '--load=20', '--kill', 'cluster-b', '--saturate=cluster-a', '--after', '5', '--for', '3', '--duration', '30', '--base-port', '18080', '--pods', '2', '--latency', '10', '--verbose', '--no-build']);
    expect(parsed).toEqual({
      type: 'run',
      options: {
        gateway: 'byo',
        load: 20,
        faults: [
          { kind: 'kill', cluster: 'cluster-b' },
          { kind: 'saturate', cluster: 'cluster-a' },
        ],
        afterS: 5,
        forS: 3,
        durationS: 30,
        basePort: 18080,
        pods: 2,
        latencyMs: 10,
        verbose: true,
        noBuild: true,
      },
    });
    expect(parseArgs(['--kill-epp', 'cluster-b'])).toMatchObject({ options: { faults: [{ kind: 'kill-epp', cluster: 'cluster-b' }] } });
    expect(parseArgs(['-h'])).toEqual({ type: 'help' });
    expect(parseArgs(['--gateway=envoy'])).toMatchObject({ options: { gateway: 'envoy' } });
  });

  it('names the problem with a bad flag', () => {
    expect(parseArgs(['--kill', 'cluster-c'])).toEqual({ type: 'error', message: '--kill: unknown cluster "cluster-c" (the demo has cluster-a and cluster-b)' });
    expect(parseArgs(['--load'])).toEqual({ type: 'error', message: '--load needs a value' });
    expect(parseArgs(['--load', 'lots'])).toMatchObject({ type: 'error', message: expect.stringContaining('--load: "lots" is not a number') });
    expect(parseArgs(['--pods', '9'])).toMatchObject({ type: 'error', message: expect.stringContaining('--pods: "9" is not an integer from 1 to 8') });
    expect(parseArgs(['--base-port', '65530'])).toMatchObject({ type: 'error' });
    expect(parseArgs(['--after', '3'])).toMatchObject({ type: 'error', message: expect.stringContaining('need a fault') });
    expect(parseArgs(['--verbose=1'])).toMatchObject({ type: 'error' });
    expect(parseArgs(['--bogus'])).toEqual({ type: 'error', message: 'unknown flag --bogus' });
    expect(parseArgs(['--gateway', 'istio'])).toEqual({ type: 'error', message: '--gateway: "istio" is not one of envoy, byo' });
    expect(parseArgs(['--gateway'])).toEqual({ type: 'error', message: '--gateway needs a value' });
  });

  it('lays out distinct ports from the base port, all within N..N+lastPort', () => {
    const l = layout(8080, 8);
    const ports = portsOf(l).map((p) => p.port);
    expect(new Set(ports).size).toBe(ports.length);
    expect(Math.min(...ports)).toBe(8080);
    expect(Math.max(...ports)).toBe(8080 + lastPort(0));
    expect(l).toMatchObject({ frontDoor: 8080, routerExtProc: 8081, routerAdmin: 8082 });
    expect(l.clusters['cluster-a']).toMatchObject({ epp: 8090, metrics: 8091 });
    expect(l.clusters['cluster-b']).toMatchObject({ epp: 8100, metrics: 8101 });
  });

  it('has a picker port in the byo shape only, checked like every other port', () => {
    expect(layout(8080, 3).routerPicker).toBeUndefined();
    expect(portsOf(layout(8080, 3)).map((p) => p.use)).not.toContain('mcip-router picker port');
    const byo = layout(8080, 8, 'byo');
    expect(byo.routerPicker).toBe(8083);
    const ports = portsOf(byo).map((p) => p.port);
    expect(portsOf(byo)).toContainEqual({ port: 8083, use: 'mcip-router picker port' });
    expect(new Set(ports).size).toBe(ports.length);
    expect(Math.max(...ports)).toBe(8080 + lastPort(0));
  });
});
