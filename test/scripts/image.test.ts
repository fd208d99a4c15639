/**
 * scripts/image.sh (`npm run image`) with a `docker` on PATH that records each call (there is
 * no Docker engine here): what it builds, how it smoke-runs the image (the chart's uid, a
 * read-only root filesystem, no capabilities), when it pushes, and that its --check smoke run
 * is a command the real CLI passes on the mounted examples.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ensureBuilt, MAIN, ROOT } from '../e2e/cli-process.js';
import { fakeBin } from '../helpers/fake-bin.js';

/** The revision the script passes to the build (REVISION, shown by --version and mcip_build_info). */
const REVISION = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();

/** A docker that logs its argv (one JSON line per call) and answers like the engine would. */
const FAKE_DOCKER = `#!/bin/sh
node -e 'require("fs").appendFileSync(process.env.DOCKER_LOG, JSON.stringify(process.argv.slice(1)) + "\\n")' -- "$@"
case "$1" in
  run) for a in "$@"; do [ "$a" = --detach ] && echo c0ffee; done ;;
  exec) n=$(cat "$DOCKER_LOG.exec" 2>/dev/null || echo 0); echo $((n + 1)) > "$DOCKER_LOG.exec"; [ "$n" -ge "\${HEALTHY_AFTER:-1}" ] || exit 1 ;;
esac
exit 0
`;

let bin: string;
beforeAll(() => {
  bin = fakeBin({ docker: FAKE_DOCKER });
  ensureBuilt();
});

function runScript(env: Record<string, string>): { code: number | null; stderr: string; calls: string[][] } {
  const log = join(mkdtempSync(join(tmpdir(), 'mcip-image-log-')), 'docker.log');
  writeFileSync(log, '');
  const r = spawnSync('sh', ['scripts/image.sh'], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { PATH: `${bin}:${process.env.PATH}`, DOCKER_LOG: log, ...env },
  });
  const calls = readFileSync(log, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as string[]);
  return { code: r.status, stderr: r.stderr, calls };
}

const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

describe('npm run image', () => {
  it('is scripts/image.sh', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts.image).toBe('sh scripts/image.sh');
  });

  it('builds IMAGE:TAG for this machine, smoke-runs it as uid 10001 on a read-only root filesystem, and pushes it with PUSH=1', () => {
    const r = runScript({ IMAGE: 'registry.example.com/team/mcip-router', PUSH: '1' });
    expect(r.code, r.stderr).toBe(0);
    const ref = `registry.example.com/team/mcip-router:${version}`;
    expect(r.calls[0]).toEqual(['build', '--build-arg', `REVISION=${REVISION}`, '--tag', ref, '.']);
    const runs = r.calls.filter((c) => c[0] === 'run');
    expect(runs).toHaveLength(2);
    for (const run of runs) {
      expect(run).toEqual(expect.arrayContaining(['--read-only', '--cap-drop', 'ALL', 'no-new-privileges']));
      expect(run).not.toContain('--pull'); // the image just built, from the local store
      expect(run[run.indexOf('--user') + 1]).toBe('10001:10001');
      expect(run).toContain(ref);
    }
    // The detached router is polled on /healthz until it answers, then removed; the push comes last.
    expect(r.calls.filter((c) => c[0] === 'exec').length).toBe(2);
    expect(r.calls.at(-1)).toEqual(['push', ref]);
    expect(r.calls.some((c) => c[0] === 'rm' && c.includes('c0ffee'))).toBe(true);
  });

  it('the --check smoke run is a command the real CLI passes on the examples the script mounts', () => {
    const r = runScript({});
    const check = r.calls.find((c) => c[0] === 'run' && c.includes('--check'))!;
    const mount = check[check.indexOf('--volume') + 1]!.split(':');
    expect(mount[0]).toBe(join(ROOT, 'examples'));
    const args = check.slice(check.indexOf(`mcip-router:${version}`) + 1).map((a) => a.replace(mount[1]!, mount[0]!));
    expect(args).toEqual(['--check', '--config', join(ROOT, 'examples/router.yaml')]);
    // Exactly what the container would run (its ENTRYPOINT is node dist/src/main.js).
    execFileSync(process.execPath, [MAIN, ...args], { cwd: tmpdir(), stdio: 'pipe' });
    // And the config loads nothing from outside the mounted directory.
    const cfg = parse(readFileSync(join(ROOT, 'examples/router.yaml'), 'utf8')) as { clusters: { manifests: { paths: string[] } }[] };
    for (const c of cfg.clusters) for (const p of c.manifests.paths) expect(p.startsWith('/') || p.startsWith('..'), p).toBe(false);
  });

  it('fails when the router never answers /healthz, and still removes the container', () => {
    const r = runScript({ HEALTHY_AFTER: '1000' });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('did not answer /healthz within 30 s');
    expect(r.calls.some((c) => c[0] === 'rm' && c.includes('c0ffee'))).toBe(true);
    expect(r.calls.some((c) => c[0] === 'push')).toBe(false);
  });

  it('builds a multi-arch image with buildx only when it is pushed', () => {
    const refused = runScript({ PLATFORMS: 'linux/amd64,linux/arm64' });
    expect(refused.code).toBe(2);
    expect(refused.calls).toEqual([]);
    const r = runScript({ IMAGE: 'registry.example.com/mcip-router', TAG: 'v1', PLATFORMS: 'linux/amd64,linux/arm64', PUSH: '1' });
    expect(r.code, r.stderr).toBe(0);
    expect(r.calls[0]).toEqual(['buildx', 'build', '--platform', 'linux/amd64,linux/arm64', '--build-arg', `REVISION=${REVISION}`, '--tag', 'registry.example.com/mcip-router:v1', '--push', '.']);
    expect(r.calls.filter((c) => c[0] === 'push')).toEqual([]);
    // The smoke runs test what was pushed: pulled, never an older local image with the same tag.
    const runs = r.calls.filter((c) => c[0] === 'run');
    expect(runs).toHaveLength(2);
    for (const run of runs) expect(run.slice(0, 3)).toEqual(['run', '--pull', 'always']);
  });
});
