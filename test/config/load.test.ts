import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseConfigText } from '../../src/config/load.js';

const VALID = `
clusterName: cluster-a
mode: Parent
listen:
  extProc: 0.0.0.0:9002
  admin: unix:/run/mcip/admin.sock
gateways:
  - {namespace: default, name: inference-gateway}
clusters:
  - name: cluster-a
    manifests:
      paths: [manifests/a, /etc/mcip/shared.yaml]
  - name: cluster-b
    manifests:
      paths: [manifests/b]
    epp:
      tls:
        caFile: certs/ca.pem
        certFile: /abs/client.pem
        keyFile: certs/client.key
    addressOverrides:
      services:
        - {namespace: default, name: epp, address: "10.1.2.3:9002"}
      gateways:
        - {namespace: default, name: gw, address: "[fd00::1]:8080"}
`;

/** Issues of the ConfigError thrown by parsing `text`, as "path: message". */
function issues(text: string): string[] {
  try {
    parseConfigText(text, 'config.yaml', '/base');
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as ConfigError).issues.map((i) => `${i.path}: ${i.message}`);
  }
  throw new Error('expected a ConfigError');
}

describe('parseConfigText', () => {
  it('parses a full config, resolving relative paths against the base directory', () => {
    const cfg = parseConfigText(VALID, 'config.yaml', '/base');
    expect(cfg.clusterName).toBe('cluster-a');
    expect(cfg.mode).toBe('Parent');
    expect(cfg.listen).toMatchObject({ extProc: '0.0.0.0:9002', admin: 'unix:/run/mcip/admin.sock' });
    expect(cfg.clusters[0]?.manifests?.paths).toEqual(['/base/manifests/a', '/etc/mcip/shared.yaml']);
    expect(cfg.clusters[1]?.manifests?.paths).toEqual(['/base/manifests/b']);
    expect(cfg.clusters[1]?.epp.tls).toMatchObject({
      enabled: true,
      insecureSkipVerify: false,
      caFile: '/base/certs/ca.pem',
      certFile: '/abs/client.pem',
      keyFile: '/base/certs/client.key',
    });
    expect(cfg.clusters[1]?.addressOverrides.gateways).toEqual([{ namespace: 'default', name: 'gw', address: '[fd00::1]:8080' }]);
  });

  it('resolves every *File field, wherever the schema puts it', () => {
    const text = VALID.replace('        keyFile: certs/client.key\n', '        keyFile: certs/client.key\n      metrics:\n        scheme: https\n        bearerTokenFile: token\n        tls: {caFile: ../ca.pem}\n');
    const epp = parseConfigText(text, 'config.yaml', '/base/etc').clusters[1]?.epp;
    expect(epp?.metrics.bearerTokenFile).toBe('/base/etc/token');
    expect(epp?.metrics.tls.caFile).toBe('/base/ca.pem');
    expect(epp?.tls.keyFile).toBe('/base/etc/certs/client.key');
  });

  it('resolves a kubernetes member\'s kubeconfig path against the config directory', () => {
    const cfg = parseConfigText(
      'clusterName: a\ngateways: [{namespace: default, name: gw}]\nclusters:\n  - {name: a, manifests: {paths: [m]}}\n  - {name: b, kubernetes: {kubeconfig: secrets/b/kubeconfig, context: b-admin}}\n',
      'config.yaml',
      '/base',
    );
    expect(cfg.clusters[1]?.kubernetes).toMatchObject({ kubeconfig: '/base/secrets/b/kubeconfig', context: 'b-admin' });
  });

  it('reports cross-field problems in the same run as field problems', () => {
    const found = issues(
      'clusterName: z\nmode: Sideways\ngateways: [{namespace: default, name: gw}]\nclusters:\n  - {name: a, manifests: {paths: [m]}}\n  - {name: a}\n',
    );
    expect(found).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^mode: /),
        expect.stringMatching(/^clusterName: "z" is not one of clusters\[\]\.name/),
        expect.stringMatching(/^clusters\[1\]\.name: duplicate cluster name "a"/),
        expect.stringMatching(/^clusters\[1\]: a cluster needs exactly one object source/),
      ]),
    );
  });

  it('applies defaults', () => {
    const cfg = parseConfigText(
      'clusterName: a\ngateways: [{namespace: default, name: gw}]\nclusters: [{name: a, manifests: {paths: [m]}}]\n',
      'config.yaml',
      '/base',
    );
    expect(cfg.mode).toBe('Endpoint');
    expect(cfg.listen).toMatchObject({ extProc: '127.0.0.1:9002', admin: '127.0.0.1:9901' });
    expect(cfg.clusters[0]).toMatchObject({
      name: 'a',
      manifests: { paths: ['/base/m'] },
      epp: { tls: { enabled: true, insecureSkipVerify: false } },
      addressOverrides: { services: [], gateways: [] },
    });
    expect(cfg.clusters[0]?.epp.tls.caFile).toBeUndefined();
    expect(cfg.extProc).toMatchObject({ maxMessageBytes: 16 * 1024 * 1024, destinationHeader: 'primary', eppStallTimeoutMs: 30_000, releaseGraceMs: 5000 });
    expect(cfg.manifests).toEqual({ debounceMs: 200, pollIntervalMs: 1000, maxFileBytes: 4 * 1024 * 1024 });
    expect(cfg.routes).toEqual({ regex: { maxLength: 1024, maxProgramSize: 200, maxInputLength: 4096 }, requestHeaders: [] });
    expect(cfg.admin).toEqual({ maxConnections: 64, headersTimeoutMs: 5000, requestTimeoutMs: 10_000, keepAliveTimeoutMs: 5000, maxHeaderBytes: 16 * 1024, exposeDebug: false });
    expect(cfg.log).toEqual({ level: 'info' });
  });

  it('rejects unknown keys, naming each', () => {
    const text = VALID.replace('mode: Parent', 'mode: Parent\nmodee: x').replace('paths: [manifests/b]', 'paths: [manifests/b]\n      path: x');
    expect(issues(text).sort()).toEqual(['clusters[1].manifests.path: unknown key', 'modee: unknown key']);
  });

  it.each(['-1', '1.5', '"30s"'])('rejects extProc.eppStallTimeoutMs %s, naming the field', (v) => {
    const out = issues(`${VALID}extProc:\n  eppStallTimeoutMs: ${v}\n`);
    expect(out).toHaveLength(1);
    expect(out[0]).toMatch(/^extProc\.eppStallTimeoutMs: /);
    expect(parseConfigText(`${VALID}extProc:\n  eppStallTimeoutMs: 0\n`, 'config.yaml', '/base').extProc.eppStallTimeoutMs).toBe(0);
  });

  it('takes extProc.releaseGraceMs, and refuses 0 (a released call would be cancelled at once), naming the field', () => {
    expect(parseConfigText(`${VALID}extProc:\n  releaseGraceMs: 250\n`, 'config.yaml', '/base').extProc.releaseGraceMs).toBe(250);
    expect(issues(`${VALID}extProc:\n  releaseGraceMs: 0\n`)[0]).toMatch(/^extProc\.releaseGraceMs: /);
  });

  it.each([
    ['routes:\n  regex:\n    maxProgramSize: 5\n', /^routes\.regex\.maxProgramSize: /],
    ['routes:\n  regex:\n    maxLength: 0\n', /^routes\.regex\.maxLength: /],
    ['admin:\n  maxConnections: 0\n', /^admin\.maxConnections: /],
    ['admin:\n  maxHeaderBytes: 10\n', /^admin\.maxHeaderBytes: /],
    ['manifests:\n  maxFileBytes: 1.5\n', /^manifests\.maxFileBytes: /],
  ])('rejects a bad input bound %j, naming the field', (yaml, field) => {
    const out = issues(`${VALID}${yaml}`);
    expect(out).toHaveLength(1);
    expect(out[0]).toMatch(field);
  });

  it('rejects a clusterName that is not a member', () => {
    expect(issues(VALID.replace('clusterName: cluster-a', 'clusterName: cluster-c'))).toEqual([
      'clusterName: "cluster-c" is not one of clusters[].name (cluster-a, cluster-b)',
    ]);
  });

  it('rejects a duplicate cluster', () => {
    expect(issues(VALID.replace('- name: cluster-b', '- name: cluster-a'))).toEqual([
      'clusters[1].name: duplicate cluster name "cluster-a"',
    ]);
  });

  it.each(['localhost', '127.0.0.1:99999', ':9002', 'unix:', 'host:port'])('rejects listen address %j', (addr) => {
    const out = issues(VALID.replace('0.0.0.0:9002', JSON.stringify(addr)));
    expect(out).toHaveLength(1);
    expect(out[0]).toMatch(/^listen\.extProc: must be host:port/);
  });

  it.each(['0.0.0.0:0', '[::1]:9002', 'unix:///tmp/x.sock', 'localhost:9002'])('accepts listen address %j', (addr) => {
    expect(parseConfigText(VALID.replace('0.0.0.0:9002', JSON.stringify(addr)), 'config.yaml', '/base').listen.extProc).toBe(addr);
  });

  it('rejects an override address with a port out of range', () => {
    expect(issues(VALID.replace('10.1.2.3:9002', '10.1.2.3:0'))).toEqual([
      'clusters[1].addressOverrides.services[0].address: must be host, host:port or [ipv6]:port (port 1-65535)',
    ]);
  });

  it('lists every issue at once, with "required" for missing fields', () => {
    const out = issues('mode: Sideways\nclusters: [{name: a, manifests: {paths: []}}, {manifests: {paths: [x]}}]\n');
    expect(out).toEqual([
      expect.stringMatching(/^mode: .*"Endpoint"\|"Parent"/),
      expect.stringMatching(/^clusters\[0\]\.manifests\.paths: .*>=1/),
      expect.stringMatching(/^clusterName: required when clusters\[\] has more than one entry/),
      expect.stringMatching(/^clusters\[1\]\.name: required \(only the local cluster's entry/),
      expect.stringMatching(/^gateways: list at least one Gateway to serve, or set endpointPicker\.ports/),
    ]);
  });

  it('formats the error message one issue per line with the file name', () => {
    try {
      parseConfigText('clusterName: a\ngateways: []\nclusters: [{name: a, manifests: {paths: []}}]\n', 'config.yaml', '/base');
      expect.unreachable();
    } catch (e) {
      expect((e as Error).message.split('\n')).toEqual([
        expect.stringMatching(/^config\.yaml: clusters\[0\]\.manifests\.paths: /),
        expect.stringMatching(/^config\.yaml: gateways: /),
      ]);
    }
  });

  it('reports YAML syntax errors with line and column', () => {
    expect(issues('clusterName: a\nclusters:\n  - name: [a\n')).toEqual([expect.stringMatching(/^: YAML syntax error: line \d+, column \d+: /)]);
    expect(issues('a: 1\na: 2\n')).toEqual([expect.stringMatching(/line 2, column 1: Map keys must be unique/)]);
  });

  it('reports an empty file', () => {
    expect(issues('# nothing\n')).toEqual([': the file is empty']);
  });
});

describe('loadConfig', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mcip-config-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reads the file and resolves paths against its directory', async () => {
    await mkdir(join(dir, 'etc'));
    await writeFile(join(dir, 'etc', 'router.yaml'), VALID);
    const cfg = await loadConfig(join(dir, 'etc', 'router.yaml'));
    expect(cfg.clusters[0]?.manifests?.paths).toEqual([join(dir, 'etc', 'manifests/a'), '/etc/mcip/shared.yaml']);
  });

  it('names the file in every issue', async () => {
    const file = join(dir, 'config.yaml');
    await writeFile(file, VALID.replace('mode: Parent', 'mode: parent'));
    await expect(loadConfig(file)).rejects.toThrow(new RegExp(`^${file}: mode: `));
  });

  it('reports a missing file', async () => {
    const file = join(dir, 'nope.yaml');
    await expect(loadConfig(file)).rejects.toMatchObject({ name: 'ConfigError', issues: [{ path: '', message: 'cannot read config: file not found' }] });
  });
});
