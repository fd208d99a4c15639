/**
 * The chart's per-member credential Secrets (EPP TLS, scrape TLS, scrape token) and its
 * optional NetworkPolicy: every file the rendered router config names is a key of a Secret
 * mounted read-only at that path, and values the operator set explicitly win.
 */
import { namedConfig } from '../../src/config/local-name.js';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import type { RouterConfig } from '../../src/config/schema.js';
import { find, renderChart, type K8sObject, type Obj, type Rendered } from './render-chart.js';
import { REMOTE_VALUES } from './sample-values.js';

type Mount = { name: string; mountPath: string; readOnly?: boolean };
type Volume = { name: string; secret?: { secretName: string; defaultMode?: number; items?: { key: string; path: string }[] } };

const pod = (r: Rendered) => (find(r, 'Deployment').spec as { template: { spec: { containers: { name: string; volumeMounts: Mount[] }[]; volumes: Volume[] } } }).template.spec;
const routerConfig = (r: Rendered): RouterConfig =>
  namedConfig(parseConfigText((find(r, 'ConfigMap', '-router') as K8sObject & { data: Record<string, string> }).data['router.yaml']!, 'router.yaml', '/etc/mcip-router'));

/** The Secret and key a file path of the router config comes from, through the router container's mounts. */
function secretKeyOf(r: Rendered, file: string): { secret: string; key: string; readOnly: boolean; mode: number | undefined } {
  const spec = pod(r);
  const mount = spec.containers.find((c) => c.name === 'router')!.volumeMounts.find((m) => m.mountPath === path.dirname(file));
  if (!mount) throw new Error(`nothing mounted at ${path.dirname(file)}`);
  const volume = spec.volumes.find((v) => v.name === mount.name)!;
  const item = volume.secret!.items?.find((i) => i.path === path.basename(file));
  return { secret: volume.secret!.secretName, key: item?.key ?? path.basename(file), readOnly: mount.readOnly === true, mode: volume.secret!.defaultMode };
}

const WITH_CREDENTIALS: Obj = {
  ...REMOTE_VALUES,
  localCluster: {
    ...(REMOTE_VALUES.localCluster as Obj),
    credentials: { eppTls: { secretName: 'local-epp-ca', ca: true } },
  },
  remoteClusters: [
    {
      ...(REMOTE_VALUES.remoteClusters as Obj[])[0],
      epp: { tls: { serverName: 'epp.cluster-b.example' }, metrics: { scheme: 'https' } },
      credentials: {
        eppTls: { secretName: 'b-epp-mtls', ca: true, clientCert: true },
        metricsTls: { secretName: 'b-metrics-ca', ca: true },
        metricsToken: { secretName: 'b-metrics-token', key: 'reader-token' },
      },
    },
    (REMOTE_VALUES.remoteClusters as Obj[])[1]!,
  ],
};

describe('member credential Secrets', () => {
  const r = renderChart(WITH_CREDENTIALS);
  const cfg = routerConfig(r);

  it('fills the EPP TLS, scrape TLS and token files into each member and mounts their Secrets read-only (0440)', () => {
    expect(r.missingValues).toEqual([]);
    const local = cfg.clusters[0]!.epp;
    expect(secretKeyOf(r, local.tls.caFile!)).toEqual({ secret: 'local-epp-ca', key: 'ca.crt', readOnly: true, mode: 0o440 });
    expect(local.tls.certFile).toBeUndefined();
    const b = cfg.clusters[1]!.epp;
    expect(b.tls.serverName).toBe('epp.cluster-b.example'); // the operator's own epp values stay
    expect([b.tls.caFile, b.tls.certFile, b.tls.keyFile].map((f) => secretKeyOf(r, f!).key)).toEqual(['ca.crt', 'tls.crt', 'tls.key']);
    expect(secretKeyOf(r, b.tls.certFile!).secret).toBe('b-epp-mtls');
    expect(secretKeyOf(r, b.metrics.tls.caFile!)).toMatchObject({ secret: 'b-metrics-ca', key: 'ca.crt', readOnly: true });
    expect(secretKeyOf(r, b.metrics.bearerTokenFile!)).toMatchObject({ secret: 'b-metrics-token', key: 'reader-token', readOnly: true });
    expect(cfg.clusters[2]!.epp.tls.caFile).toBeUndefined();
  });

  it('lets values set in epp win over the filled-in paths', () => {
    const values = structuredClone(WITH_CREDENTIALS) as { remoteClusters: Obj[] };
    values.remoteClusters[0]!.epp = { tls: { caFile: '/etc/ssl/certs/ca-certificates.crt' }, metrics: { scheme: 'https' } };
    expect(routerConfig(renderChart(values as Obj)).clusters[1]!.epp.tls.caFile).toBe('/etc/ssl/certs/ca-certificates.crt');
  });

  it('mounts nothing by default', () => {
    const d = renderChart({});
    expect(pod(d).volumes.map((v) => v.name).filter((n) => n.startsWith('creds-'))).toEqual([]);
    expect(routerConfig(d).clusters[0]!.epp.tls).toMatchObject({ enabled: true, insecureSkipVerify: false });
  });
});

describe('NetworkPolicy', () => {
  it('is off by default', () => {
    expect(renderChart({}).objects.some((o) => o.kind === 'NetworkPolicy')).toBe(false);
  });

  it('admits traffic to Envoy from trafficFrom and the admin port from metricsFrom only, on the pod ports', () => {
    const monitoring = { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } };
    const gateways = { podSelector: { matchLabels: { app: 'lb' } } };
    const r = renderChart({ networkPolicy: { enabled: true, trafficFrom: [gateways], metricsFrom: [monitoring] } });
    const np = find(r, 'NetworkPolicy') as K8sObject & { spec: { podSelector: { matchLabels: Obj }; policyTypes: string[]; ingress: { ports: { port: string }[]; from?: Obj[] }[] } };
    const deployment = find(r, 'Deployment').spec as { selector: { matchLabels: Obj }; template: { spec: { containers: { ports: { name: string }[] }[] } } };
    expect(np.spec.podSelector.matchLabels).toEqual(deployment.selector.matchLabels);
    expect(np.spec.policyTypes).toEqual(['Ingress']);
    expect(np.spec.ingress).toEqual([
      { ports: [{ port: 'http', protocol: 'TCP' }], from: [gateways] },
      { ports: [{ port: 'admin', protocol: 'TCP' }], from: [monitoring] },
    ]);
    const named = deployment.template.spec.containers.flatMap((c) => c.ports.map((p) => p.name));
    for (const rule of np.spec.ingress) for (const p of rule.ports) expect(named).toContain(p.port);
  });

  it('without metricsFrom, leaves the admin port closed to other pods; without trafficFrom, Envoy open to all', () => {
    const np = find(renderChart({ networkPolicy: { enabled: true } }), 'NetworkPolicy') as K8sObject & { spec: { ingress: Obj[] } };
    expect(np.spec.ingress).toEqual([{ ports: [{ port: 'http', protocol: 'TCP' }] }]);
  });
});

describe('RBAC for metrics scrapes', () => {
  type Role = K8sObject & { rules: Obj[] };
  type Binding = K8sObject & { roleRef: { name: string }; subjects: { name: string }[] };
  const r = renderChart({ remoteReader: { create: true } });

  it.each([
    ['the router (local EPPs, service-account token)', '-mcip-router-metrics', () => (find(r, 'Deployment').spec as { template: { spec: { serviceAccountName: string } } }).template.spec.serviceAccountName],
    ['the remote reader (other members scrape this cluster)', '-reader-metrics', () => find(r, 'ServiceAccount', '-reader').metadata.name],
  ])('grants GET on the non-resource URL /metrics to %s', (_who, suffix, account) => {
    const role = find(r, 'ClusterRole', suffix) as Role;
    expect(role.rules).toEqual([{ nonResourceURLs: ['/metrics'], verbs: ['get'] }]);
    const binding = find(r, 'ClusterRoleBinding', suffix) as Binding;
    expect(binding.roleRef.name).toBe(role.metadata.name);
    expect(binding.subjects.map((s) => s.name)).toEqual([account()]);
  });
});
