/**
 * The CLI as operators run it: flags, exit codes, --check output and start-up
 * failures (serving and graceful shutdown: cli-serve.e2e.test.ts).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { gatewayYaml, poolYaml, routeYaml, writeClusterSet } from './clusterset.js';
import { ensureBuilt, ROOT, runCli } from './cli-process.js';

beforeAll(() => ensureBuilt(), 120_000);

describe('mcip-router CLI', () => {
  it('--help and --version exit 0', async () => {
    const help = await runCli(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: mcip-router --config FILE');
    const version = await runCli(['--version']);
    expect(version.code).toBe(0);
    expect(version.stdout.trim()).toMatch(/^mcip-router \d+\.\d+\.\d+ \(revision \S+, node v\d+\.\d+\.\d+\)$/);
  });

  it('bad flags and a missing config exit 2 naming the problem', async () => {
    const bad = await runCli(['--confg', 'x.yaml']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--confg');
    const none = await runCli([], { MCIP_ROUTER_CONFIG: '' });
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('MCIP_ROUTER_CONFIG');
    const missing = await runCli(['--config', '/nonexistent/router.yaml']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('/nonexistent/router.yaml');
  });

  it('an invalid config exits 2 and names every bad field', async () => {
    const set = writeClusterSet([{ name: 'cluster-a', files: { 'gw.yaml': gatewayYaml() } }]);
    const file = join(set.dir, 'bad.yaml');
    writeFileSync(
      file,
      ['clusterName: cluster-z', 'mode: Sideways', 'gateways: [{namespace: default, name: gw}]', 'clusters: [{name: cluster-a, manifests: {paths: [cluster-a]}}]', 'extProc: {maxMesageBytes: 10}'].join('\n'),
    );
    const run = await runCli(['--config', file]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('clusterName');
    expect(run.stderr).toContain('mode');
    expect(run.stderr).toContain('maxMesageBytes');
  });

  it('--check prints the routing table of the examples on stdout, logs on stderr, and exits 0 (also via MCIP_ROUTER_CONFIG)', async () => {
    const run = await runCli(['--check', '--log-level', 'info'], { MCIP_ROUTER_CONFIG: join(ROOT, 'examples/router.yaml') });
    expect(run.code).toBe(0);
    expect(run.stdout.startsWith('Routing snapshot v1')).toBe(true);
    expect(run.stdout).not.toContain('{"level"');
    expect(run.stdout).toContain('llm-route');
    expect(run.stdout).toContain('cluster-a');
    expect(run.stdout).toContain('cluster-b');
    expect(run.stdout).toContain('127.0.0.1:9202');
    // The examples carry no hand-written import status: the import is derived from cluster-b's exported pool.
    expect(run.stdout).toContain('exporting clusters: cluster-b (source: derived from exported pools)');
    expect(run.stdout).toContain('Diagnostics: 0 error(s)');
    const logs = run.stderr.trim().split('\n');
    expect(logs.length).toBeGreaterThan(0);
    for (const line of logs) expect((JSON.parse(line) as { level: string }).level).toBe('info');
  });

  it('--check exits 1 when the routes load but have errors (half the traffic would get HTTP 500)', async () => {
    const set = writeClusterSet([
      {
        name: 'cluster-a',
        files: {
          'gw.yaml': gatewayYaml(),
          'pool.yaml': poolYaml('p'),
          'route.yaml': routeYaml('r', 'h.example', [{ kind: 'InferencePool', name: 'p', weight: 50 }, { kind: 'InferencePool', name: 'missing', weight: 50 }]),
        },
      },
    ]);
    const run = await runCli(['--check', '--config', set.configFile]);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain('[NO USABLE POOL: its share of requests gets HTTP 500]');
    expect(run.stdout).toContain('Diagnostics: 2 error(s)');
    expect(run.stdout).toContain('HTTPRoute default/r [spec.rules[0].backendRefs[1]]: BackendNotFound: backendRef InferencePool default/missing has no usable pool');
  });

  it('--check leaves out invalid objects by name (exit 1) and accepts a pool without endpointPickerRef', async () => {
    const bare = poolYaml('bare').replace(/ {2}endpointPickerRef:\n(?: {4}.*\n)+/, '  appProtocol: http\n');
    const set = writeClusterSet([
      {
        name: 'cluster-a',
        files: {
          'gw.yaml': gatewayYaml(),
          'pool.yaml': poolYaml('p').replace('number: 8000', 'number: 70000'),
          'bare.yaml': bare,
          'route.yaml': routeYaml('r', 'h.example', [{ kind: 'InferencePool', name: 'p', weight: -1 }]),
        },
      },
    ]);
    const run = await runCli(['--check', '--config', set.configFile]);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/cluster-a: InferencePool default\/p \[spec\.targetPorts\[0\]\.number\]: InvalidObject: .*pool\.yaml/);
    expect(run.stdout).toMatch(/cluster-a: HTTPRoute default\/r \[spec\.rules\[0\]\.backendRefs\[0\]\.weight\]: UnsupportedValue: .*route\.yaml/);
    expect(run.stdout).toMatch(/cluster-a: InferencePool default\/bare \[spec\.endpointPickerRef\]: EndpointPickerRefMissing/);
  });

  it('--check on manifests that do not parse prints every error with file and line on stderr, and exits 2', async () => {
    const set = writeClusterSet([
      { name: 'cluster-a', files: { 'gw.yaml': gatewayYaml(), 'pool.yaml': `${poolYaml('p')}  oops: [\n`, 'list.yaml': '- not\n- an object\n' } },
    ]);
    const run = await runCli(['--check', '--config', set.configFile]);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/pool\.yaml.*YAML syntax error at line \d+/);
    expect(run.stderr).toMatch(/list\.yaml#0.*not a Kubernetes object/);
  });

  it.each([
    ['a misspelt backendRefs key', (y: string) => y.replace('backendRefs:', 'backendRef:'), 'HTTPRoute default/r [spec.rules[0].backendRef]: UnsupportedValue: unknown field "backendRef" (did you mean "backendRefs"?)'],
    ['a parentRef to a Gateway that does not exist', (y: string) => y.replace(/parentRefs:\n {4}- name: \S+/, 'parentRefs:\n    - name: no-such-gw'), 'HTTPRoute default/r [spec.parentRefs[0]]: NoMatchingParent: Gateway default/no-such-gw is neither served'],
    ['a rule without backendRefs', (y: string) => y.replace(/ {6}backendRefs:\n(?: {8}.*\n)+/, ''), 'HTTPRoute default/r [spec.rules[0].backendRefs]: NoBackendRefs: rule 0 has no backendRefs'],
    ['a rule with only weight-0 backendRefs', (y: string) => y.replace('weight: 1', 'weight: 0'), 'NoBackendWeight: every backendRef of rule 0 has weight 0'],
    ['a rule with a header modifier, a request timeout and retries', (y: string) => `${y}      filters: [{type: RequestHeaderModifier, requestHeaderModifier: {add: [{name: x, value: y}]}}]\n      timeouts: {request: 30s}\n      retry: {attempts: 2}\n`, 'HTTPRoute default/r [spec.rules[0].timeouts]: UnsupportedValue: timeouts: '],
  ])('--check exits 1 for a route whose requests would all fail: %s, naming the reason', async (_, change, line) => {
    const route = routeYaml('r', 'h.example', [{ kind: 'InferencePool', name: 'p', weight: 1 }]);
    const changed = change(route);
    expect(changed).not.toBe(route);
    const set = writeClusterSet([{ name: 'cluster-a', files: { 'gw.yaml': gatewayYaml(), 'pool.yaml': poolYaml('p'), 'route.yaml': changed } }]);
    const run = await runCli(['--check', '--config', set.configFile]);
    expect(run.stdout).toContain(line);
    expect(run.code).toBe(1);
  });

  it('--check names file, line and column of a YAML syntax error', async () => {
    const set = writeClusterSet([{ name: 'cluster-a', files: { 'gw.yaml': gatewayYaml(), 'pool.yaml': 'kind: [\n' } }]);
    const run = await runCli(['--check', '--config', set.configFile]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^error: cluster cluster-a: \S+\/pool\.yaml: YAML syntax error at line 2, column 1: /m);
    expect(run.stderr).not.toContain(': :');
  });

  it('--help says what each --check exit code means', async () => {
    const help = await runCli(['--help']);
    expect(help.stdout).toMatch(/0 {2}no error diagnostic/);
    expect(help.stdout).toMatch(/1 {2}loaded, but routes or objects have errors/);
    expect(help.stdout).toMatch(/2 {2}bad flags, invalid config, or manifests that\s+cannot be read or parsed/);
  });

  it('refuses to start on manifests that do not parse (exit 2), naming the file', async () => {
    const set = writeClusterSet([{ name: 'cluster-a', files: { 'pool.yaml': 'kind: [\n' } }]);
    const run = await runCli(['--config', set.configFile]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('pool.yaml');
  });
});
