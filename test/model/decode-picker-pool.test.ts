import { describe, expect, it } from 'vitest';
import { decodeAnswer, decodeBackends } from '../../src/model/decode-picker-pool.js';

describe('the mcip-router.dev/backends annotation', () => {
  it('reads Kind/name[=weight] entries, spaces around commas allowed, weight 1 by default, up to 1,000,000', () => {
    expect(decodeBackends(' InferencePool/llama-local ,InferencePoolImport/llama=1000000,InferencePool/zero=0')).toEqual({
      ok: true,
      value: [
        { kind: 'InferencePool', group: 'inference.networking.k8s.io', name: 'llama-local', weight: 1 },
        { kind: 'InferencePoolImport', group: 'inference.networking.x-k8s.io', name: 'llama', weight: 1_000_000 },
        { kind: 'InferencePool', group: 'inference.networking.k8s.io', name: 'zero', weight: 0 },
      ],
    });
  });

  it.each([
    ['InferencePool/llm=-1', 'BackendInvalid'],
    ['InferencePool/llm=1.5', 'BackendInvalid'],
    ['InferencePool/LLM', 'BackendInvalid'],
    ['InferencePool/llm,', 'BackendInvalid'],
    ['inferencepool/llm', 'BackendKindUnknown'],
    ['InferencePool/llm=99999999999999999999', 'BackendWeightInvalid'],
  ])('refuses %s (%s)', (text, reason) => {
    expect(decodeBackends(text)).toMatchObject({ ok: false, reason });
  });

  it('quotes what it refuses short and escaped: a huge entry or a terminal escape in the annotation stays out of the message', () => {
    const huge = decodeBackends(`InferencePool/${'a'.repeat(250_000)}`);
    expect(huge).toMatchObject({ ok: false, reason: 'BackendInvalid' });
    expect(!huge.ok && huge.message.length).toBeLessThan(400);
    const esc = decodeBackends('InferencePool/\u001b[2J\u001b[31mok');
    expect(!esc.ok && esc.message).not.toMatch(/\u001b/);
    expect(!esc.ok && esc.message).toContain('\\u001b[2J');
    const answer = decodeAnswer(`\u001b]0;${'x'.repeat(100_000)}`, 'relay');
    expect(!answer.ok && answer.message.length).toBeLessThan(400);
    expect(!answer.ok && answer.message).not.toMatch(/\u001b/);
  });

  it('refuses a list longer than any pool needs before reading it all', () => {
    const many = Array.from({ length: 65 }, (_, i) => `InferencePool/p${i}`).join(',');
    expect(decodeBackends(many)).toMatchObject({ ok: false, reason: 'BackendsTooMany' });
  });
});

describe('the mcip-router.dev/answer annotation', () => {
  it('takes direct or relay, and the default when absent', () => {
    expect(decodeAnswer(undefined, 'relay')).toEqual({ ok: true, value: 'relay' });
    expect(decodeAnswer('direct', 'relay')).toEqual({ ok: true, value: 'direct' });
    expect(decodeAnswer('Relay', 'direct')).toMatchObject({ ok: false, reason: 'AnswerInvalid' });
  });
});
