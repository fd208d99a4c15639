/**
 * Connections to an HTTPS API server are kept across requests: lists, writes and watches of one
 * kubeconfig reuse idle keep-alive connections (client-node alone opens one TLS connection per
 * request), and a certificate-authority file that changes takes effect at the next request.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadKubeConfig } from '../../../src/sources/kubernetes/kubeconfig.js';
import { createLister } from '../../../src/sources/kubernetes/lister.js';
import { RESOURCE_SPECS } from '../../../src/sources/kubernetes/resources.js';
import { KubeApiServer } from '../../harness/kube-apiserver.js';
import { createTestCa } from '../../helpers/pki.js';
import { pool } from './kube-fixtures.js';

const ca = createTestCa('dispatcher cache CA');
const otherCa = createTestCa('a CA that signed nothing here');
afterAll(() => {
  ca.remove();
  otherCa.remove();
});

let server: KubeApiServer;
beforeEach(async () => {
  server = new KubeApiServer({ token: 'reader', tls: ca.leaf('apiserver', ['IP:127.0.0.1']) });
  await server.start();
  server.create('inferencepools', pool('llm'));
});
afterEach(async () => {
  await server.close();
});

/** A kubeconfig trusting the CA in `caFile`, with a bearer token. */
function kubeconfig(caFile: string): string {
  const file = join(ca.dir, 'kubeconfig');
  writeFileSync(
    file,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server: server.url, 'certificate-authority': caFile } }],
      users: [{ name: 'u', user: { token: 'reader' } }],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'x',
    }),
  );
  return file;
}

describe('kept connections', () => {
  it('ten lists one after another reuse their TLS connections (client-node alone opens one per request)', async () => {
    const caFile = join(ca.dir, 'trusted.pem');
    writeFileSync(caFile, ca.cert);
    const list = createLister(loadKubeConfig({ kubeconfig: kubeconfig(caFile) }));
    for (let i = 0; i < 10; i++) expect((await list(RESOURCE_SPECS.InferencePool, undefined)).items.map((o) => o.metadata?.name)).toEqual(['llm']);
    expect(server.requests.filter((r) => r.plural === 'inferencepools')).toHaveLength(10);
    // undici may open a second connection while the first one's response is being finished; never one per request.
    expect(server.connectionsAccepted).toBeLessThanOrEqual(2);
  });

  it('a certificate-authority file that changes is used by the next request (a new connection)', async () => {
    const caFile = join(ca.dir, 'rotating.pem');
    writeFileSync(caFile, ca.cert);
    const list = createLister(loadKubeConfig({ kubeconfig: kubeconfig(caFile) }));
    await list(RESOURCE_SPECS.InferencePool, undefined);
    // The file now names a CA that did not sign the server's certificate: the kept connection is not used.
    writeFileSync(caFile, otherCa.cert);
    await expect(list(RESOURCE_SPECS.InferencePool, undefined)).rejects.toThrow();
    writeFileSync(caFile, ca.cert);
    expect((await list(RESOURCE_SPECS.InferencePool, undefined)).items).toHaveLength(1);
    expect(server.connectionsAccepted).toBeGreaterThanOrEqual(3);
  });
});
