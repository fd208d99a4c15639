/**
 * The local cluster's name: the About API's ClusterProperty, read from an API
 * server stand-in over real HTTP, against the config's clusterName.
 */
import { describe, expect, it } from 'vitest';
import { readAboutName } from '../../../src/sources/identity/about-api.js';
import { type AboutName, IdentityError, IdentityMismatchError, decideIdentity } from '../../../src/sources/identity/cluster-identity.js';
import { loadKubeConfig } from '../../../src/sources/kubernetes/kubeconfig.js';
import { clusterProperty, useStandinCluster } from './about-fixtures.js';

const cluster = useStandinCluster();

const kubeConfig = () => loadKubeConfig({ kubeconfig: cluster.kubeconfig, requestTimeoutMs: 500 });
/** The config's clusterName against what the About API said. */
const fromConfig = (name: string, about: AboutName | undefined) =>
  decideIdentity({ local: `cluster ${name}`, config: { value: name, from: `config clusterName "${name}"` }, ...(about ? { about } : {}) });

describe('the About API name', () => {
  it('is read from the ClusterProperty cluster.clusterset.k8s.io, in either served version', async () => {
    cluster.server.create('clusterproperties', clusterProperty('cluster-a'));
    expect(await readAboutName(kubeConfig())).toEqual({ state: 'found', value: 'cluster-a', version: 'v1beta1' });
    // A CRD that serves only v1alpha1 (an older About API install): v1beta1, asked first, is not served.
    let asked = 0;
    cluster.server.answerWith(
      (r) => r.plural === 'clusterproperties' && asked++ === 0,
      (req, res) => {
        expect(req.url).toMatch(/^\/apis\/about\.k8s\.io\/v1beta1\//);
        res.writeHead(404, { 'content-type': 'text/plain' }).end('404 page not found');
      },
    );
    expect(await readAboutName(kubeConfig())).toEqual({ state: 'found', value: 'cluster-a', version: 'v1alpha1' });
  });

  it('absent when the property is not set or the About API is not installed; unreadable when forbidden or down', async () => {
    expect(await readAboutName(kubeConfig())).toMatchObject({ state: 'absent' });
    cluster.server.uninstall('clusterproperties');
    expect(await readAboutName(kubeConfig())).toMatchObject({ state: 'absent', message: expect.stringMatching(/no ClusterProperty cluster\.clusterset\.k8s\.io/) });
    cluster.server.install('clusterproperties');
    cluster.server.forbid('clusterproperties');
    expect(await readAboutName(kubeConfig())).toMatchObject({ state: 'unreadable', message: expect.stringMatching(/forbidden \(403\)/) });
    await cluster.server.down();
    expect(await readAboutName(kubeConfig())).toMatchObject({ state: 'unreadable' });
  });

  it('a clusterName that differs from it is an error naming both values and where each came from', async () => {
    cluster.server.create('clusterproperties', clusterProperty('cluster-east'));
    const about = await readAboutName(kubeConfig());
    const err = (() => {
      try {
        return fromConfig('cluster-a', about);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(IdentityMismatchError);
    expect((err as Error).message).toBe(
      'cluster name mismatch: config clusterName "cluster-a" (the router config) differs from "cluster-east" (the About API of cluster cluster-a (ClusterProperty cluster.clusterset.k8s.io, about.k8s.io/v1beta1)); this cluster is "cluster-east" in its ClusterSet: set clusterName and its clusters[].name to "cluster-east", or correct the ClusterProperty',
    );
    expect(fromConfig('cluster-east', about)).toEqual({
      name: 'cluster-east',
      from: 'the About API of cluster cluster-east (ClusterProperty cluster.clusterset.k8s.io, about.k8s.io/v1beta1), matching config clusterName "cluster-east"',
    });
  });

  it('a value that is no cluster name is refused; without an About API the config names the cluster, saying why', () => {
    expect(() => fromConfig('cluster-a', { state: 'found', value: 'Cluster A!', version: 'v1beta1' })).toThrow(IdentityError);
    expect(() => fromConfig('cluster-a', { state: 'found', value: 'Cluster A!', version: 'v1beta1' })).toThrow(/"Cluster A!" from the About API .* is not a valid cluster name/);
    expect(fromConfig('cluster-a', { state: 'absent', message: 'no ClusterProperty' }).from).toBe('config clusterName "cluster-a" (About API: no ClusterProperty)');
    expect(fromConfig('cluster-a', undefined).from).toMatch(/^config clusterName "cluster-a" \(the local cluster is not read from a Kubernetes API/);
  });
});
