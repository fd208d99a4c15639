import { describe, expect, it } from 'vitest';
import { hostnameWithin, intersectHostnames, normalizeHostname, unionHostnames } from '../../src/snapshot/hostname.js';

describe('hostnameWithin', () => {
  it('a wildcard matches one or more labels but never the bare domain', () => {
    expect(hostnameWithin('*.example.com', 'a.example.com')).toBe(true);
    expect(hostnameWithin('*.example.com', 'a.b.example.com')).toBe(true);
    expect(hostnameWithin('*.example.com', 'example.com')).toBe(false);
    expect(hostnameWithin('*.example.com', 'badexample.com')).toBe(false);
  });
  it('a narrower wildcard lies within a broader one', () => {
    expect(hostnameWithin('*.example.com', '*.foo.example.com')).toBe(true);
    expect(hostnameWithin('*.foo.example.com', '*.example.com')).toBe(false);
  });
  it('exact names only match themselves', () => {
    expect(hostnameWithin('a.example.com', 'a.example.com')).toBe(true);
    expect(hostnameWithin('a.example.com', 'b.example.com')).toBe(false);
  });
  it('normalises case and a trailing dot', () => {
    expect(normalizeHostname('My.Model.COM.')).toBe('my.model.com');
  });
});

describe('intersectHostnames', () => {
  it('no listener hostname: route hostnames as given, or any', () => {
    expect(intersectHostnames([], undefined)).toBe('any');
    expect(intersectHostnames(['A.example.com'], undefined)).toEqual(['a.example.com']);
  });
  it('no route hostnames: the listener hostname', () => {
    expect(intersectHostnames([], '*.example.com')).toEqual(['*.example.com']);
  });
  it('keeps route hostnames within the listener and narrows route wildcards to a specific listener', () => {
    expect(intersectHostnames(['a.example.com', 'other.org', 'example.com'], '*.example.com')).toEqual(['a.example.com']);
    expect(intersectHostnames(['*.example.com'], 'foo.example.com')).toEqual(['foo.example.com']);
    expect(intersectHostnames(['*.example.com'], '*.foo.example.com')).toEqual(['*.foo.example.com']);
  });
  it('returns an empty list when nothing intersects', () => {
    expect(intersectHostnames(['other.org'], 'my.model.com')).toEqual([]);
  });
  it('union: any wins, otherwise deduplicated', () => {
    expect(unionHostnames([['a'], 'any'])).toBe('any');
    expect(unionHostnames([['a', 'b'], ['b']])).toEqual(['a', 'b']);
  });
});
