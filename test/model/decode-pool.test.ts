import { describe, expect, it } from 'vitest';
import { decodeErrors, decodeOk, decodeYaml, edit, expectOneError } from './decode-helpers.js';

const POOL = `
apiVersion: inference.networking.k8s.io/v1
kind: InferencePool
metadata:
  name: llm-pool
  namespace: example
  annotations:
    inference.networking.x-k8s.io/export: ClusterSet
spec:
  selector:
    matchLabels:
      app: my-model
  targetPorts:
    - number: 8080
  endpointPickerRef:
    name: epp
    port:
      number: 9002
  somethingNew: ignored
`;
const P = 'InferencePool example/llm-pool';

describe('InferencePool', () => {
  it('decodes with defaults applied', () => {
    const pool = decodeOk(POOL, 'InferencePool');
    expect(pool.apiVersion).toBe('inference.networking.k8s.io/v1');
    expect(pool.metadata).toEqual({
      name: 'llm-pool',
      namespace: 'example',
      labels: {},
      annotations: { 'inference.networking.x-k8s.io/export': 'ClusterSet' },
    });
    expect(pool.spec).toEqual({
      selector: { matchLabels: { app: 'my-model' } },
      targetPorts: [{ number: 8080 }],
      appProtocol: 'http',
      endpointPickerRef: { group: '', kind: 'Service', name: 'epp', port: { number: 9002 }, failureMode: 'FailClose' },
    });
    expect(pool.status).toEqual({ parents: [] });
  });

  it('defaults the namespace to "default"', () => {
    const pool = decodeOk(edit(POOL, '  namespace: example\n', ''), 'InferencePool');
    expect(pool.metadata.namespace).toBe('default');
  });

  it('decodes status.parents with parentRef defaults', () => {
    const pool = decodeOk(
      `${POOL}
status:
  parents:
    - parentRef: {name: gw}
      controllerName: example.com/gw
      conditions:
        - {type: Accepted, status: "True", reason: Accepted}
`,
      'InferencePool',
    );
    expect(pool.status.parents).toEqual([
      {
        parentRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'gw' },
        controllerName: 'example.com/gw',
        conditions: [{ type: 'Accepted', status: 'True', reason: 'Accepted' }],
      },
    ]);
  });

  it('accepts an explicit FailOpen and h2c', () => {
    const text = edit(edit(POOL, '    name: epp\n', '    name: epp\n    failureMode: FailOpen\n'), 'somethingNew: ignored', 'appProtocol: kubernetes.io/h2c');
    const pool = decodeOk(text, 'InferencePool');
    expect(pool.spec.endpointPickerRef?.failureMode).toBe('FailOpen');
    expect(pool.spec.appProtocol).toBe('kubernetes.io/h2c');
  });

  it('accepts a pool without endpointPickerRef (optional since v1.6) and with appProtocol', () => {
    const text = edit(edit(POOL, '  endpointPickerRef:\n    name: epp\n    port:\n      number: 9002\n', ''), 'somethingNew: ignored', 'appProtocol: http');
    const pool = decodeOk(text, 'InferencePool');
    expect(pool.spec.endpointPickerRef).toBeUndefined();
    expect(pool.spec.appProtocol).toBe('http');
    expect(pool.spec.targetPorts).toEqual([{ number: 8080 }]);
  });

  it('does not require a port for a non-Service picker', () => {
    const text = edit(POOL, '    port:\n      number: 9002\n', '    kind: Picker\n');
    expect(decodeOk(text, 'InferencePool').spec.endpointPickerRef).toEqual({
      group: '',
      kind: 'Picker',
      name: 'epp',
      failureMode: 'FailClose',
    });
  });

  it.each([
    ['missing name', edit(POOL, '  name: llm-pool\n', ''), 'metadata.name', /required/, 'InferencePool example/?'],
    ['bad name', edit(POOL, 'name: llm-pool', 'name: LLM_Pool'), 'metadata.name', /RFC 1123/, 'InferencePool example/LLM_Pool'],
    ['missing spec', POOL.slice(0, POOL.indexOf('spec:')), 'spec', /required/],
    ['bad namespace', edit(POOL, 'namespace: example', 'namespace: Example'), 'metadata.namespace', /RFC 1123 label/, 'InferencePool Example/llm-pool'],
    ['missing selector', edit(POOL, '  selector:\n    matchLabels:\n      app: my-model\n', ''), 'spec.selector', /required/],
    ['missing matchLabels', edit(POOL, ' app: my-model', ''), 'spec.selector.matchLabels', /required/],
    ['missing targetPorts', edit(POOL, '- number: 8080', ''), 'spec.targetPorts', /required/],
    ['port out of range', edit(POOL, '- number: 8080', '- number: 70000'), 'spec.targetPorts[0].number', /between 1 and 65535/],
    ['port not an integer', edit(POOL, '- number: 8080', '- number: "8080"'), 'spec.targetPorts[0].number', /integer/],
    ['duplicate targetPort', edit(POOL, '- number: 8080', '- number: 8080\n    - number: 8080'), 'spec.targetPorts[1].number', /unique/],
    ['missing picker name', edit(POOL, '    name: epp\n', ''), 'spec.endpointPickerRef.name', /required/],
    ['missing picker port', edit(POOL, '    port:\n      number: 9002\n', ''), 'spec.endpointPickerRef.port', /required when kind is Service/],
    ['bad picker port', edit(POOL, 'number: 9002', 'number: 0'), 'spec.endpointPickerRef.port.number', /between 1 and 65535/],
    ['bad failureMode', edit(POOL, '    name: epp\n', '    name: epp\n    failureMode: failclose\n'), 'spec.endpointPickerRef.failureMode', /FailOpen, FailClose/],
    ['bad appProtocol', edit(POOL, 'somethingNew: ignored', 'appProtocol: grpc'), 'spec.appProtocol', /http, kubernetes.io\/h2c/],
    ['non-string label', edit(POOL, 'app: my-model', 'app: 3'), 'spec.selector.matchLabels.app', /string/],
  ])('reports %s', (_, text, path, message, object = P) => {
    expectOneError(text, object, path, message);
  });

  it('hints at the pre-v1 portNumber field', () => {
    const text = edit(POOL, '    port:\n      number: 9002\n', '    portNumber: 9002\n');
    expectOneError(text, P, 'spec.endpointPickerRef.port', /portNumber/);
  });

  it('reports more than 8 targetPorts', () => {
    const ports = Array.from({ length: 9 }, (_, i) => `- number: ${8000 + i}`).join('\n    ');
    expectOneError(edit(POOL, '- number: 8080', ports), P, 'spec.targetPorts', /at most 8/);
  });

  it('reports every error of an object at once', () => {
    const text = edit(edit(POOL, '- number: 8080', '- number: 0'), 'name: epp', '');
    expect(decodeErrors(text).map((e) => e.path)).toEqual(['spec.targetPorts[0].number', 'spec.endpointPickerRef.name']);
  });

  it('rejects an unsupported version of a known group, naming the supported one', () => {
    const text = POOL.replace('inference.networking.k8s.io/v1', 'inference.networking.x-k8s.io/v1alpha2');
    expectOneError(text, P, 'apiVersion', /use inference\.networking\.k8s\.io\/v1$/);
  });
});

const IMPORT = `
apiVersion: inference.networking.x-k8s.io/v1alpha1
kind: InferencePoolImport
metadata:
  name: llm-pool
  namespace: example
status:
  controllers:
    - name: example.com/mcip-controller
      type: MultiCluster
      exportingClusters:
        - name: cluster-a
        - name: cluster-b
    - name: example.com/ig-controller
      parents:
        - parentRef: {group: gateway.networking.k8s.io, kind: Gateway, name: inf-gw}
          conditions:
            - {type: Accepted, status: "True"}
      conditions:
        - {type: Accepted, status: "True", reason: Accepted}
`;
const I = 'InferencePoolImport example/llm-pool';

describe('InferencePoolImport', () => {
  it('decodes the status-only object', () => {
    const imp = decodeOk(IMPORT, 'InferencePoolImport');
    expect(imp.status.controllers).toEqual([
      { name: 'example.com/mcip-controller', exportingClusters: [{ name: 'cluster-a' }, { name: 'cluster-b' }], parents: [], conditions: [] },
      {
        name: 'example.com/ig-controller',
        exportingClusters: [],
        parents: [
          {
            parentRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'inf-gw' },
            conditions: [{ type: 'Accepted', status: 'True' }],
          },
        ],
        conditions: [{ type: 'Accepted', status: 'True', reason: 'Accepted' }],
      },
    ]);
  });

  it('accepts the legacy controllerName field', () => {
    const imp = decodeOk(IMPORT.replace('- name: example.com/mcip-controller', '- controllerName: example.com/mcip-controller'), 'InferencePoolImport');
    expect(imp.status.controllers[0]?.name).toBe('example.com/mcip-controller');
  });

  it('decodes an import without status as having no controllers', () => {
    const imp = decodeOk(IMPORT.slice(0, IMPORT.indexOf('status:')), 'InferencePoolImport');
    expect(imp.status.controllers).toEqual([]);
  });

  it.each([
    ['missing controller name', IMPORT.replace('- name: example.com/mcip-controller', '- conditions: []'), 'status.controllers[0].name', /required/],
    ['controller name without a path', IMPORT.replace('example.com/mcip-controller', 'example.com'), 'status.controllers[0].name', /domain-prefixed path/],
    ['duplicate controller', IMPORT.replace('example.com/ig-controller', 'example.com/mcip-controller'), 'status.controllers[1].name', /duplicate/],
    ['missing cluster name', IMPORT.replace('- name: cluster-b', '- {}'), 'status.controllers[0].exportingClusters[1].name', /required/],
    ['duplicate cluster', IMPORT.replace('- name: cluster-b', '- name: cluster-a'), 'status.controllers[0].exportingClusters[1].name', /duplicate/],
    ['bad condition status', IMPORT.replace('{type: Accepted, status: "True", reason', '{type: Accepted, status: "Yes", reason'), 'status.controllers[1].conditions[0].status', /True, False, Unknown/],
    ['parent without name', IMPORT.replace('name: inf-gw', 'sectionName: http'), 'status.controllers[1].parents[0].parentRef.name', /required/],
    ['exportingClusters not a list', IMPORT.replace(/exportingClusters:\n(.*\n){2}/, 'exportingClusters: cluster-a\n'), 'status.controllers[0].exportingClusters', /must be a list/],
  ])('reports %s', (_, text, path, message) => {
    expectOneError(text, I, path, message);
  });

  it('reports more than 8 controllers', () => {
    const many = Array.from({ length: 9 }, (_, i) => `    - name: example.com/c${i}`).join('\n');
    const text = `${IMPORT.slice(0, IMPORT.indexOf('  controllers:'))}  controllers:\n${many}\n`;
    expectOneError(text, I, 'status.controllers', /at most 8/);
  });

  it('rejects an unsupported version', () => {
    const text = IMPORT.replace('inference.networking.x-k8s.io/v1alpha1', 'inference.networking.x-k8s.io/v1');
    expectOneError(text, I, 'apiVersion', /use inference\.networking\.x-k8s\.io\/v1alpha1/);
  });

  it('is ignored when the kind is unrelated', () => {
    expect(decodeYaml('apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n')).toEqual({ type: 'ignored', kind: 'ConfigMap', apiVersion: 'v1' });
  });
});
