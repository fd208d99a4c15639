/** Fixtures of the Endpoint Picker role tests: free ports and multi-cluster pool manifests. */
import { createServer } from 'node:net';
import { stringify } from 'yaml';

/** Ports free right now (bound on port 0, then released). */
export async function freePorts(n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const s = createServer();
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    out.push((s.address() as { port: number }).port);
    await new Promise((r) => s.close(r));
  }
  return out;
}

/** A multi-cluster pool: an InferencePool whose endpointPickerRef names the router's Service on `port`. */
export function pickerPoolYaml(name: string, port: number, backends: string, o: { answer?: string; targetPort?: number; parentGateway?: string } = {}): string {
  return stringify({
    apiVersion: 'inference.networking.k8s.io/v1',
    kind: 'InferencePool',
    metadata: { name, namespace: 'default', annotations: { 'mcip-router.dev/backends': backends, ...(o.answer ? { 'mcip-router.dev/answer': o.answer } : {}) } },
    spec: {
      selector: { matchLabels: { app: 'mcip-router' } },
      targetPorts: [{ number: o.targetPort ?? 8000 }],
      endpointPickerRef: { name: 'mcip-router', port: { number: port } },
    },
    ...(o.parentGateway ? { status: { parents: [{ parentRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: o.parentGateway }, conditions: [] }] } } : {}),
  });
}

