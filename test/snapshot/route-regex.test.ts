import { describe, expect, it, vi } from 'vitest';
import { RE2JS } from 're2js';
import { routeRegexSchema } from '../../src/config/limits-schema.js';
import { compileRouteRegex, estimateProgramSize, programSize, type RegexLimits } from '../../src/snapshot/route-regex.js';
import { timeWork } from '../helpers/work-time.js';

const LIMITS: RegexLimits = routeRegexSchema.parse({});

function compiled(source: string, limits: RegexLimits = LIMITS) {
  const c = compileRouteRegex(source, limits);
  if (!c.ok) throw new Error(c.message);
  return c.regex;
}

function refused(source: string, limits: RegexLimits = LIMITS): string {
  const c = compileRouteRegex(source, limits);
  expect(c.ok).toBe(false);
  return c.ok ? '' : c.message;
}

describe('compileRouteRegex: RE2 syntax, whole-value match', () => {
  it.each([
    ['/v1/models/[a-z0-9-]+/completions', '/v1/models/llama-3/completions', '/v1/models/llama-3/completions/x'],
    ['(?i)/V1/chat', '/v1/CHAT', '/v2/chat'],
    ['/(?P<model>[^/]+)/x', '/m/x', '/m/y/x'],
    ['[[:alpha:]]+', 'abc', 'abc1'],
    ['\\pL+', 'héllo', 'a b'],
    ['gold|silver', 'silver', 'goldsilver'],
  ])('%s matches %s and not %s', (source, yes, no) => {
    const r = compiled(source);
    expect(r.matches(yes)).toBe(true);
    expect(r.matches(no)).toBe(false);
  });

  it.each([
    ['lookahead', '/v1/(?=chat)'],
    ['lookbehind', '(?<=a)b'],
    ['backreference', '(a)\\1'],
    ['possessive', 'a++'],
    ['unbalanced', '/v1/(chat'],
  ])('%s is refused with RE2\'s reason', (_what, source) => {
    expect(refused(source)).toMatch(/^invalid RE2 regular expression ".*": error parsing regexp: /);
  });
});

describe('compileRouteRegex: bounds', () => {
  it('refuses a pattern over maxLength', () => {
    expect(refused('a'.repeat(LIMITS.maxLength + 1))).toBe(`regular expression is ${LIMITS.maxLength + 1} characters, over the limit of ${LIMITS.maxLength} (routes.regex.maxLength)`);
    expect(compileRouteRegex('a'.repeat(LIMITS.maxLength), { ...LIMITS, maxProgramSize: 100_000 }).ok).toBe(true);
  });

  it('refuses a program over maxProgramSize, before compiling when the estimate is far over', () => {
    expect(refused('(a|aa){1000}')).toMatch(/too complex: about \d+ RE2 instructions, limit 200/);
    expect(refused('.{150}.{100}')).toMatch(/too complex: \d+ RE2 instructions, limit 200/);
    expect(compileRouteRegex('.{150}', LIMITS).ok).toBe(true);
    // The estimate bounds compile time: (a|aa){1000} takes ~100 ms to compile, refused without compiling.
    const compile = vi.spyOn(RE2JS, 'compile');
    try {
      const t = timeWork(() => refused('(a|aa){1000}(b|bb){1000}'));
      expect(compile).not.toHaveBeenCalled();
      expect(t.ms).toBeLessThan(50);
      refused('.{150}.{100}'); // the spy sees compiles: refused after compiling
      expect(compile).toHaveBeenCalledTimes(1);
    } finally {
      compile.mockRestore();
    }
  });

  it('a value longer than maxInputLength never matches', () => {
    const r = compiled('a*', { ...LIMITS, maxInputLength: 10 });
    expect(r.matches('a'.repeat(10))).toBe(true);
    expect(r.matches('a'.repeat(11))).toBe(false);
  });

  it('programSize reads the compiled program (guards an re2js upgrade that moves it)', () => {
    expect(programSize(RE2JS.compile('abc'))).toBeGreaterThanOrEqual(3);
  });

  it.each(['/v1/models/[a-z0-9-]+/completions', '(?i)/v1/(chat/completions|completions|embeddings)', '(.{10}){10}', '[[:alpha:]]{3,5}', '(?P<m>[^/]+)/x', 'a{2,}b?c*'])(
    'the estimate of %s is within a small factor of the real size',
    (source) => {
      const real = programSize(RE2JS.compile(source));
      const estimate = estimateProgramSize(source);
      expect(estimate).toBeGreaterThan(real / 4);
      expect(estimate).toBeLessThan(real * 4);
    },
  );

  it('a catastrophic-backtracking pattern runs in linear time on long values', () => {
    const r = compiled('/(a+)+b');
    const t = timeWork(() => r.matches(`/${'a'.repeat(LIMITS.maxInputLength - 1)}`));
    expect(t.result).toBe(false);
    expect(t.ms).toBeLessThan(100); // V8's RegExp: 40 characters take seconds
  });
});
