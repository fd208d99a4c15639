/** Which clusters[] entry is local, and when the config may leave its name open (YAML through parseConfigText). */
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfigText } from '../../src/config/load.js';
import { controllerEnabled } from '../../src/config/schema.js';
import { configuredName, namedConfig, withLocalName } from '../../src/config/local-name.js';

const parse = (yaml: string) => parseConfigText(`gateways: [{namespace: default, name: gw}]\n${yaml}`, 'router.yaml', '/etc/mcip-router');
const issues = (yaml: string): string[] => {
  try {
    parse(yaml);
    return [];
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return err.issues.map((i) => `${i.path}: ${i.message}`);
  }
};
const KUBE = '{inCluster: true}';
const FILES = '{paths: [m]}';
const FLEET = 'fleet: {clusterProfiles: {namespace: fleet-system, providerFile: p.json, localProfile: cluster-home}}\n';

describe('the local cluster entry', () => {
  it('with clusterName: the entry of that name, as before; another entry marked local is refused', () => {
    const cfg = parse(`clusterName: b\nclusters: [{name: a, manifests: ${FILES}}, {name: b, kubernetes: ${KUBE}}]\n`);
    expect(configuredName(cfg)).toEqual({ value: 'b', from: 'config clusterName "b"' });
    expect(controllerEnabled(cfg)).toBe(true);
    expect(namedConfig(cfg).clusters.map((c) => c.name)).toEqual(['a', 'b']);
    expect(issues(`clusterName: b\nclusters: [{name: a, local: true, manifests: ${FILES}}, {name: b, kubernetes: ${KUBE}}]\n`)).toEqual([
      'clusters[0].local: the local cluster is clusterName "b" (clusters[1]), not this entry',
    ]);
    expect(issues(`clusterName: c\nclusters: [{name: a, manifests: ${FILES}}]\n`)).toEqual(['clusterName: "c" is not one of clusters[].name (a)']);
  });

  it('without clusterName: the only entry, or the one marked local; it may leave its name to the About API or its ClusterProfile', () => {
    const only = parse(`clusters: [{kubernetes: ${KUBE}}]\n`);
    expect(configuredName(only)).toBeUndefined();
    expect(withLocalName(only, 'cluster-east')).toMatchObject({ clusterName: 'cluster-east', clusters: [{ name: 'cluster-east' }] });
    const marked = parse(`clusters: [{name: b, manifests: ${FILES}}, {local: true, kubernetes: ${KUBE}}]\n`);
    expect(controllerEnabled(marked)).toBe(true);
    expect(withLocalName(marked, 'a').clusters.map((c) => c.name)).toEqual(['b', 'a']);
    // A named local entry is the config's name for it.
    expect(configuredName(parse(`clusters: [{name: b, manifests: ${FILES}}, {name: a, local: true, manifests: ${FILES}}]\n`))).toEqual({ value: 'a', from: 'config clusters[1].name "a"' });
    // Manifests have no About API: the local ClusterProfile can still name it.
    expect(configuredName(parse(`clusters: [{manifests: ${FILES}}]\n${FLEET}`))).toBeUndefined();
  });

  it('refuses what leaves the local cluster ambiguous or unnamable, saying what to set', () => {
    expect(issues(`clusters: [{name: a, manifests: ${FILES}}, {name: b, kubernetes: ${KUBE}}]\n`)).toEqual([
      'clusterName: required when clusters[] has more than one entry: set clusterName, or mark the entry of the cluster the router runs in with local: true',
    ]);
    expect(issues(`clusters: [{name: a, local: true, manifests: ${FILES}}, {name: b, local: true, kubernetes: ${KUBE}}]\n`)).toEqual([
      'clusters[1].local: only one entry can be the local cluster (clusters[0] is marked local too)',
    ]);
    expect(issues(`clusters: [{local: true, kubernetes: ${KUBE}}, {kubernetes: ${KUBE}}]\n`)).toEqual([
      "clusters[1].name: required (only the local cluster's entry may leave its name to its About API or ClusterProfile)",
    ]);
    expect(issues(`clusters: [{manifests: ${FILES}}]\n`)).toEqual([
      'clusterName: required: nothing else can name the local cluster (its entry reads manifests, so it has no About API, and fleet.clusterProfiles.localProfile is not set); set clusterName',
    ]);
    expect(issues(`clusterName: a\nclusters: [{name: a, manifests: ${FILES}}]\nfleet: {clusterProfiles: {namespace: fleet-system, providerFile: p.json, localProfile: Not_A_Name}}\n`)).toEqual([
      expect.stringMatching(/^fleet\.clusterProfiles\.localProfile: /),
    ]);
  });
});
