/**
 * Seeded fuzzing of route regular expressions: random patterns built from
 * RE2 and non-RE2 syntax pieces (nested quantifiers, big counted repetitions,
 * lookaround, classes, broken syntax). Compiling never throws (a refusal is a
 * reason), and compiling plus matching a hostile value of the longest allowed
 * length stays within a bounded time per pattern.
 */
import { describe, expect, it } from 'vitest';
import { routeRegexSchema } from '../../src/config/limits-schema.js';
import { compileRouteRegex } from '../../src/snapshot/route-regex.js';
import { fuzz, fuzzSeed, type Rng } from '../helpers/fuzz.js';

const LIMITS = routeRegexSchema.parse({});

const ATOMS = ['a', 'b', '/', '.', '\\d', '\\w', '[a-z]', '[^/]', '(?i)', '\\pL', '[[:alpha:]]', '\\b', '^', '$', '(?=a)', '\\1', '(', ')', '[', '\\', '{', '}'];
const QUANTIFIERS = ['', '', '*', '+', '?', '*?', '{2}', '{1,}', '{0,30}', '{1000}', '{999,1000}', '++'];

function pattern(r: Rng, depth = 0): string {
  let out = '';
  for (let n = 1 + r.int(5); n > 0; n--) {
    const piece = depth < 3 && r.chance(0.3) ? `(${pattern(r, depth + 1)}${r.chance(0.3) ? `|${pattern(r, depth + 1)}` : ''})` : r.pick(ATOMS);
    out += piece + r.pick(QUANTIFIERS);
  }
  return out;
}

function hostileInput(r: Rng): string {
  const len = r.pick([0, 1, 40, 1000, LIMITS.maxInputLength]);
  return r.chance(0.5) ? r.text(len, 'a') + r.pick(['', 'b', '!']) : r.text(len, 'ab/1 _-.');
}

describe('fuzz: route regular expressions', () => {
  it('random patterns: compile or refuse with a reason, never throw; compile and match within bounded time', () => {
    const seed = fuzzSeed(11_5001);
    let compiled = 0;
    let refused = 0;
    fuzz('route regex', seed, { iterations: 400, maxInputMs: 250 }, (r) => {
      const c = compileRouteRegex(pattern(r), LIMITS);
      if (!c.ok) {
        refused++;
        expect(c.message.length).toBeGreaterThan(0);
        return;
      }
      compiled++;
      for (let k = 0; k < 3; k++) expect(typeof c.regex.matches(hostileInput(r))).toBe('boolean');
    });
    // The corpus exercises both outcomes.
    expect(compiled).toBeGreaterThan(50);
    expect(refused).toBeGreaterThan(50);
  });
});
