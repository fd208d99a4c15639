import { describe, expect, it } from 'vitest';
import { decodeObject, objectIdentity } from '../../src/model/decode.js';
import { decodeYaml } from './decode-helpers.js';

describe('decodeObject', () => {
  it('ignores kinds the router does not read', () => {
    expect(decodeYaml('apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n')).toEqual({
      type: 'ignored',
      kind: 'Deployment',
      apiVersion: 'apps/v1',
    });
  });

  it('reports a document that is not an object, by origin', () => {
    expect(decodeObject('hello', 'a.yaml#3')).toEqual({
      type: 'invalid',
      errors: [{ object: 'a.yaml#3', path: '', message: expect.stringMatching(/not a Kubernetes object/), origin: 'a.yaml#3' }],
    });
  });

  it('reports a missing kind by origin and a missing apiVersion by identity', () => {
    expect(decodeYaml('metadata: {name: x}\n')).toMatchObject({ type: 'invalid', errors: [{ object: 'test.yaml#0', path: 'kind' }] });
    expect(decodeYaml('kind: Service\nmetadata: {name: x, namespace: ns}\n')).toMatchObject({
      type: 'invalid',
      errors: [{ object: 'Service ns/x', path: 'apiVersion', message: 'required' }],
    });
  });

  it('names an object by kind and name only when both are strings (what can be left out alone)', () => {
    expect(objectIdentity({ kind: 'InferencePool', metadata: { name: 'p', namespace: 'ns' } })).toEqual({ kind: 'InferencePool', namespace: 'ns', name: 'p' });
    expect(objectIdentity({ kind: 'Service', metadata: { name: 'p' } })).toEqual({ kind: 'Service', namespace: 'default', name: 'p' });
    for (const raw of ['text', [1], { metadata: { name: 'p' } }, { kind: 'Service' }, { kind: 'Service', metadata: { name: 3 } }, { kind: 'Service', metadata: { name: 'p', namespace: 7 } }]) {
      expect(objectIdentity(raw)).toBeUndefined();
    }
    const missingName = decodeObject({ apiVersion: 'v1', kind: 'Service', metadata: {} });
    expect(missingName.type === 'invalid' && missingName.errors.every((e) => e.ref === undefined)).toBe(true);
  });

  it('works without an origin', () => {
    const r = decodeObject({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'x' }, spec: { ports: [{ port: 0 }] } });
    expect(r).toEqual({
      type: 'invalid',
      errors: [{ object: 'Service default/x', ref: { kind: 'Service', namespace: 'default', name: 'x' }, path: 'spec.ports[0].port', message: 'must be between 1 and 65535, got 0' }],
    });
  });

  it('rejects an old Gateway API version', () => {
    const r = decodeYaml('apiVersion: gateway.networking.k8s.io/v1alpha2\nkind: HTTPRoute\nmetadata: {name: r}\n');
    expect(r).toMatchObject({
      type: 'invalid',
      errors: [{ path: 'apiVersion', message: expect.stringMatching(/use gateway.networking.k8s.io\/v1 or gateway.networking.k8s.io\/v1beta1/) }],
    });
  });

  it('reports a metadata that is not an object', () => {
    expect(decodeYaml('apiVersion: v1\nkind: Service\nmetadata: [1]\n')).toMatchObject({
      type: 'invalid',
      errors: [{ object: 'Service default/?', path: 'metadata', message: expect.stringMatching(/must be an object/) }],
    });
  });
});
