/**
 * The Dockerfile (not buildable here: no Docker engine; scripts/image.sh builds and smoke-runs
 * it, test/scripts/image.test.ts) copies what the build and the runtime need, runs the CLI
 * entry point, builds for any platform without emulation, and runs as the chart runs it:
 * the chart's non-root uid on a read-only root filesystem.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXT_PROC_PROTO } from '../../src/protocol/proto-files.js';
import { defaultValues, REPO } from './render-chart.js';

const dockerfile = readFileSync(path.join(REPO, 'Dockerfile'), 'utf8');
const ignored = readFileSync(path.join(REPO, '.dockerignore'), 'utf8').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
const pkg = JSON.parse(readFileSync(path.join(REPO, 'package.json'), 'utf8')) as { bin: Record<string, string>; scripts: Record<string, string> };
const lines = dockerfile.split('\n').filter((l) => !l.startsWith('#'));
/** Sources of `COPY` from the build context (not --from a stage). */
const contextCopies = lines.filter((l) => l.startsWith('COPY ') && !l.includes('--from')).flatMap((l) => l.split(/\s+/).slice(1, -1));

describe('Dockerfile', () => {
  it('builds in a stage on the active LTS line the package supports and runs in another on the same line', () => {
    expect(lines.filter((l) => l.startsWith('FROM '))).toEqual(['FROM --platform=$BUILDPLATFORM node:26-slim AS build', 'FROM node:26-slim']);
    const engines = (JSON.parse(readFileSync(path.join(REPO, 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node;
    expect(Number(/>=\s*(\d+)/.exec(engines)?.[1])).toBeLessThanOrEqual(26);
    expect(dockerfile).toMatch(/RUN npm ci\b/);
    expect(dockerfile).toMatch(/npm run build/);
    expect(dockerfile).toMatch(/npm prune --omit=dev/);
  });

  it('copies every file the build script and npm ci read, and none of them is in .dockerignore', () => {
    const project = /-p\s+(\S+)/.exec(pkg.scripts.build!)![1]!;
    const tsconfig = JSON.parse(readFileSync(path.join(REPO, project), 'utf8')) as { extends?: string };
    const needed = ['package.json', 'package-lock.json', project, ...(tsconfig.extends ? [path.normalize(tsconfig.extends)] : []), 'src', 'protos'];
    for (const f of needed) {
      expect(contextCopies, f).toContain(f);
      expect(ignored, f).not.toContain(f);
      expect(existsSync(path.join(REPO, f)), f).toBe(true);
    }
  });

  it('ships the protos and package.json the router loads at run time', () => {
    expect(existsSync(path.join(REPO, 'protos', EXT_PROC_PROTO))).toBe(true);
    expect(dockerfile).toMatch(/^COPY protos \.\/protos$/m);
    expect(dockerfile).toMatch(/^COPY --from=build \/app\/package\.json \.\/package\.json$/m);
    expect(dockerfile).toMatch(/^COPY --from=build \/app\/dist\/src \.\/dist\/src$/m);
  });

  it('runs the package bin as a numeric non-root user: the uid and gid the chart runs its pods with', () => {
    expect(lines.find((l) => l.startsWith('ENTRYPOINT'))).toBe(`ENTRYPOINT ["node", "${pkg.bin['mcip-router']}"]`);
    const users = lines.filter((l) => l.startsWith('USER '));
    expect(users).toHaveLength(1);
    const user = /^USER (\d+):(\d+)$/.exec(users[0]!);
    expect(user).not.toBeNull();
    expect(Number(user![1])).toBeGreaterThan(0);
    // USER comes after the last instruction of the runtime stage that writes, so nothing runs as root at run time.
    expect(lines.indexOf(users[0]!)).toBeGreaterThan(lines.findLastIndex((l) => /^(COPY|RUN|ADD) /.test(l)));
    const pod = defaultValues().podSecurityContext as Record<string, unknown>;
    expect([pod.runAsUser, pod.runAsGroup, pod.runAsNonRoot]).toEqual([Number(user![1]), Number(user![2]), true]);
  });

  it('the chart runs both containers on a read-only root filesystem, without privilege escalation or capabilities', () => {
    const c = defaultValues().containerSecurityContext as { readOnlyRootFilesystem: boolean; allowPrivilegeEscalation: boolean; capabilities: { drop: string[] } };
    expect(c.readOnlyRootFilesystem).toBe(true);
    expect(c.allowPrivilegeEscalation).toBe(false);
    expect(c.capabilities.drop).toEqual(['ALL']);
    // The only writable path the router has is the chart's /tmp emptyDir: the image writes nothing at start.
    expect(dockerfile).not.toMatch(/^VOLUME /m);
  });

  it('multi-arch: the build stage runs on the build platform, the runtime stage runs nothing, no runtime dependency is platform-specific', () => {
    const runtime = lines.slice(lines.findLastIndex((l) => l.startsWith('FROM ')));
    expect(runtime.filter((l) => l.startsWith('RUN '))).toEqual([]);
    expect(lines.join('\n')).not.toMatch(/amd64|arm64|x86_64|aarch64/);
    const lock = JSON.parse(readFileSync(path.join(REPO, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean; os?: string[]; cpu?: string[] }> };
    const native = Object.entries(lock.packages).filter(([name, p]) => name !== '' && !p.dev && (p.os !== undefined || p.cpu !== undefined));
    expect(native.map(([name]) => name)).toEqual([]);
  });
});
