/**
 * The shipped Envoy configs validate against the upstream Envoy API protos,
 * say what the sidecar relies on, and a typo anywhere in them fails.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  cluster,
  clusterIndex,
  ENVOY_DIR,
  envoyFiles,
  errorsAfter,
  extProc,
  extProcPath,
  filterIndex,
  HCM_PATH,
  hcm,
  HEADER_MUTATION_TYPE,
  HEALTH_CHECK_TYPE,
  HTTP_OPTIONS_TYPE,
  EXT_PROC_TYPE,
  loadConfig,
  rename,
  route,
  sidecarFiles,
  routerMaxRequestsPerConnection,
  type Tree,
} from './config-fixtures.js';
import { formatError, validateEnvoyFile } from './validate-envoy-config.js';
import { DEFAULT_EPP_HEADERS, routerConfigSchema } from '../../src/config/schema.js';
import { DESTINATION_KIND_HEADER, ROUTER_METADATA_NAMESPACE } from '../../src/protocol/constants.js';
import { ROUTER_DECISION_KEYS } from '../../src/protocol/router-metadata.js';

const MINIMAL_ROUTER_CONFIG = { clusterName: 'a', gateways: [{ namespace: 'n', name: 'g' }], clusters: [{ name: 'a', manifests: { paths: ['x'] } }] };

const EXT_PROC_SERVICE = 'envoy.service.ext_proc.v3.ExternalProcessor';
const DEST_HEADER = 'x-gateway-destination-endpoint';

describe('shipped Envoy configs', () => {
  it('ships the sidecar config and its variants', () => {
    expect(envoyFiles()).toEqual(expect.arrayContaining(['envoy.yaml', 'envoy-unix-socket.yaml', 'envoy-parent-tls.yaml']));
  });

  it.each(envoyFiles())('%s validates with zero errors', (file) => {
    const errors = validateEnvoyFile(path.join(ENVOY_DIR, file));
    expect(errors.map((e) => formatError(e) + (e.hint ? ` (did you mean "${e.hint}"?)` : ''))).toEqual([]);
  });

  it.each(envoyFiles())('%s binds admin to loopback only', (file) => {
    const admin = loadConfig(file).admin.address.socket_address;
    expect(admin.address).toBe('127.0.0.1');
    expect(admin.port_value).not.toBe(9901); // the router's admin port in the same pod
  });

  it.each(sidecarFiles())('%s sends every request through ext_proc with the EPP processing modes', (file) => {
    const doc = loadConfig(file);
    const cfg = extProc(doc);
    expect(cfg.processing_mode).toEqual({
      request_header_mode: 'SEND',
      response_header_mode: 'SEND',
      request_body_mode: 'FULL_DUPLEX_STREAMED',
      response_body_mode: 'FULL_DUPLEX_STREAMED',
      request_trailer_mode: 'SEND',
      response_trailer_mode: 'SEND',
    });
    expect(cfg.grpc_service.envoy_grpc.cluster_name).toBe('mcip_router');
    expect(cfg.failure_mode_allow).toBe(false);
    expect(cfg.allow_mode_override).toBe(false);
    expect(parseInt(cfg.message_timeout, 10)).toBeGreaterThanOrEqual(60);
    expect(cfg.grpc_service.envoy_grpc.max_receive_message_length).toBeGreaterThanOrEqual(16 * 1024 * 1024);
    expect(cfg.metadata_options.forwarding_namespaces.untyped).toContain('envoy.lb');
    expect(cfg.metadata_options.receiving_namespaces.untyped).toContain('envoy.lb');
  });

  it.each(sidecarFiles())('%s keeps the router\'s decision (mcip.router) and logs each of its keys next to the destination', (file) => {
    const doc = loadConfig(file);
    expect(extProc(doc).metadata_options.receiving_namespaces.untyped).toEqual(expect.arrayContaining(['envoy.lb', ROUTER_METADATA_NAMESPACE]));
    const format = hcm(doc).access_log[0].typed_config.log_format.json_format as Record<string, string>;
    const logged = Object.values(format);
    for (const key of ROUTER_DECISION_KEYS) expect(logged).toContain(`%DYNAMIC_METADATA(${ROUTER_METADATA_NAMESPACE}:${key})%`);
    expect(format.destination).toBe('%REQ(X-GATEWAY-DESTINATION-ENDPOINT)%');
  });

  it.each(envoyFiles())('%s strips a client-sent destination header before ext_proc', (file) => {
    const doc = loadConfig(file);
    const strip = filterIndex(doc, HEADER_MUTATION_TYPE);
    expect(strip).toBeGreaterThanOrEqual(0);
    expect(strip).toBeLessThan(filterIndex(doc, EXT_PROC_TYPE));
    expect(hcm(doc).http_filters[strip].typed_config.mutations.request_mutations).toContainEqual({ remove: DEST_HEADER });
  });

  it.each(envoyFiles())('%s routes to an ORIGINAL_DST cluster keyed on the destination header', (file) => {
    const doc = loadConfig(file);
    // The catch-all route (the last): earlier ones handle a parent destination.
    const r = hcm(doc).route_config.virtual_hosts[0].routes.at(-1).route;
    expect(parseInt(r.timeout, 10)).toBeGreaterThanOrEqual(600);
    const dst = cluster(doc, r.cluster);
    expect(dst.type).toBe('ORIGINAL_DST');
    expect(dst.lb_policy).toBe('CLUSTER_PROVIDED');
    expect(dst.original_dst_lb_config).toEqual({ use_http_header: true, http_header_name: DEST_HEADER });
  });

  it.each(sidecarFiles())('%s health-checks the router cluster over gRPC with the ext_proc service', (file) => {
    const doc = loadConfig(file);
    const router = cluster(doc, 'mcip_router');
    expect(router.type).toBe('STATIC');
    expect(router.health_checks[0].grpc_health_check.service_name).toBe(EXT_PROC_SERVICE);
    const h2 = router.typed_extension_protocol_options[HTTP_OPTIONS_TYPE].explicit_http_config.http2_protocol_options;
    expect(h2.initial_stream_window_size).toBeGreaterThanOrEqual(16 * 1024 * 1024);
    expect(router.circuit_breakers.thresholds[0].max_requests).toBeGreaterThanOrEqual(10_000);
    // The router sheds streams past extProc.maxStreams; Envoy's breaker stops them first.
    expect(router.circuit_breakers.thresholds[0].max_requests).toBe(routerConfigSchema.parse(MINIMAL_ROUTER_CONFIG).extProc.maxStreams);
    // Envoy's own readiness follows the router's health.
    const hc = hcm(doc).http_filters[filterIndex(doc, HEALTH_CHECK_TYPE)].typed_config;
    expect(hc.cluster_min_healthy_percentages.mcip_router).toEqual({ value: 100 });
  });

  it.each(sidecarFiles())('%s lets through exactly the header mutations the router allows an EPP by default, plus its own', (file) => {
    const rules = extProc(loadConfig(file)).mutation_rules;
    expect(rules.disallow_all).toBe(true);
    const allowed = new RegExp(rules.allow_expression.regex);
    const expected = [...DEFAULT_EPP_HEADERS, DESTINATION_KIND_HEADER];
    for (const h of expected) expect(allowed.test(h), h).toBe(true);
    for (const h of ['authorization', 'x-request-id', 'set-cookie', 'location', 'host', ':authority', `${DEST_HEADER}x`, `x${DEST_HEADER}`]) {
      expect(allowed.test(h), h).toBe(false);
    }
    expect(rules.allow_expression.regex).toBe(`^(${expected.join('|')})$`);
  });

  it('a typo in mutation_rules fails validation', () => {
    expect(errorsAfter((d) => rename(extProc(d).mutation_rules, 'disallow_all', 'disalow_all'))).toEqual([
      expect.stringContaining('disalow_all'),
    ]);
  });

  it.each(sidecarFiles())('%s rotates router connections below Node\'s default HTTP/2 rapid-reset limit (1000 RST_STREAM per connection)', (file) => {
    // Envoy resets every ext_proc stream when it is done; past ~1000 resets on one connection
    // Node's HTTP/2 server sends GOAWAY and fails every stream on it (envoy/README.md).
    const max = routerMaxRequestsPerConnection(file);
    expect(Number.isInteger(max)).toBe(true);
    expect(max).toBeGreaterThan(0);
    expect(max).toBeLessThan(1000);
  });

  it('envoy.yaml reaches the router on 127.0.0.1:9002 and model servers over plain HTTP', () => {
    const doc = loadConfig('envoy.yaml');
    const ep = cluster(doc, 'mcip_router').load_assignment.endpoints[0].lb_endpoints[0].endpoint;
    expect(ep.address.socket_address).toEqual({ address: '127.0.0.1', port_value: 9002 });
    expect(doc.static_resources.listeners[0].address.socket_address).toEqual({ address: '0.0.0.0', port_value: 8080 });
    expect(cluster(doc, 'original_destination').transport_socket).toBeUndefined();
  });

  it('envoy-unix-socket.yaml reaches the router on its unix socket', () => {
    const ep = cluster(loadConfig('envoy-unix-socket.yaml'), 'mcip_router').load_assignment.endpoints[0].lb_endpoints[0].endpoint;
    expect(ep.address).toEqual({ pipe: { path: '/var/run/mcip/extproc.sock' } });
  });

  it('envoy-parent-tls.yaml dials the remote gateway over verified TLS', () => {
    const doc = loadConfig('envoy-parent-tls.yaml');
    const dst = cluster(doc, route(doc).route.cluster);
    const tls = dst.transport_socket.typed_config;
    expect(tls['@type']).toBe('type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext');
    expect(tls.common_tls_context.validation_context.trusted_ca.filename).toMatch(/^\//);
    expect(dst.typed_extension_protocol_options[HTTP_OPTIONS_TYPE].upstream_http_protocol_options).toEqual({
      auto_sni: true,
      auto_san_validation: true,
    });
  });
});

describe('the validator catches typos in envoy.yaml', () => {
  const ORIGINAL_DST = (doc: Tree): number => clusterIndex(doc, 'original_destination');

  it('a misspelled top-level field', () => {
    expect(errorsAfter((d) => rename(d, 'static_resources', 'static_resource'))).toContain(
      'static_resource: unknown field "static_resource" in envoy.config.bootstrap.v3.Bootstrap',
    );
  });

  it('a misspelled cluster field', () => {
    const errors = errorsAfter((d) => rename(cluster(d, 'mcip_router'), 'connect_timeout', 'connect_timout'));
    expect(errors).toContain('static_resources.clusters[0].connect_timout: unknown field "connect_timout" in envoy.config.cluster.v3.Cluster');
  });

  it('a misspelled field in the HttpConnectionManager typed_config', () => {
    expect(errorsAfter((d) => rename(hcm(d), 'stat_prefix', 'stat_prefx'))).toContainEqual(
      expect.stringMatching(new RegExp(`^${escape(HCM_PATH)}\\.stat_prefx: unknown field`)),
    );
  });

  it('a misspelled field deep inside the ext_proc typed_config', () => {
    const doc = loadConfig();
    const errors = errorsAfter((d) => rename(extProc(d).metadata_options.receiving_namespaces, 'untyped', 'untypd'));
    expect(errors).toEqual([`${extProcPath(doc)}.metadata_options.receiving_namespaces.untypd: unknown field "untypd" in envoy.extensions.filters.http.ext_proc.v3.MetadataOptions.MetadataNamespaces`]);
  });

  it('a misspelled field inside a cluster typed_extension_protocol_options body', () => {
    const errors = errorsAfter((d) => {
      const opts = cluster(d, 'mcip_router').typed_extension_protocol_options[HTTP_OPTIONS_TYPE].explicit_http_config;
      rename(opts.http2_protocol_options, 'initial_stream_window_size', 'initial_stream_windw_size');
    });
    expect(errors).toContainEqual(expect.stringContaining('http2_protocol_options.initial_stream_windw_size: unknown field'));
  });

  it('a bad enum value', () => {
    const doc = loadConfig();
    const errors = errorsAfter((d) => (extProc(d).processing_mode.request_body_mode = 'FULL_DUPLEX_STREAM'));
    expect(errors).toEqual([`${extProcPath(doc)}.processing_mode.request_body_mode: unknown enum value "FULL_DUPLEX_STREAM"`]);
    expect(`${extProcPath(doc)}.processing_mode.request_body_mode`).toBe(
      'static_resources.listeners[0].filter_chains[0].filters[0].typed_config.http_filters[2].typed_config.processing_mode.request_body_mode',
    );
  });

  it('a bad duration', () => {
    const doc = loadConfig();
    const routePath = `${HCM_PATH}.route_config.virtual_hosts[0].routes[0].route.timeout`;
    expect(errorsAfter((d) => (route(d).route.timeout = '60m'))).toEqual([`${routePath}: invalid duration string "60m" (want e.g. "30s" or "0.25s")`]);
    expect(errorsAfter((d) => (route(d).route.timeout = 3600))).toEqual([`${routePath}: invalid duration number 3600 (want e.g. "30s" or "0.25s")`]);
    // PGV bound from ext_proc.proto: message_timeout <= 3600s.
    expect(errorsAfter((d) => (extProc(d).message_timeout = '3601s'))).toEqual([`${extProcPath(doc)}.message_timeout: must be <= 3600s`]);
  });

  it('a wrong scalar type', () => {
    const doc = loadConfig();
    expect(errorsAfter((d) => (extProc(d).failure_mode_allow = 'false'))).toEqual([
      `${extProcPath(doc)}.failure_mode_allow: expected bool, got string "false"`,
    ]);
    expect(errorsAfter((d) => (hcm(d).stat_prefix = 8080))).toEqual([`${HCM_PATH}.stat_prefix: expected string, got number 8080`]);
    expect(errorsAfter((d) => (cluster(d, 'mcip_router').circuit_breakers.thresholds[0].max_requests = 1.5))).toEqual([
      'static_resources.clusters[0].circuit_breakers.thresholds[0].max_requests: expected uint32, got number 1.5',
    ]);
  });

  it('an unresolvable @type', () => {
    const doc = loadConfig();
    const url = `type.googleapis.com/${EXT_PROC_TYPE}`.replace('Processor', 'Procesor');
    expect(errorsAfter((d) => (extProc(d)['@type'] = url))).toEqual([`${extProcPath(doc)}.@type: unresolvable @type "${url}"`]);
  });

  it('a route to an undefined cluster', () => {
    expect(errorsAfter((d) => (route(d).route.cluster = 'original_destinaton'))).toEqual([
      `${HCM_PATH}.route_config.virtual_hosts[0].routes[0].route.cluster: cluster "original_destinaton" is not defined in static_resources.clusters`,
    ]);
  });

  it('a grpc_service naming an undefined cluster', () => {
    const doc = loadConfig();
    expect(errorsAfter((d) => (extProc(d).grpc_service.envoy_grpc.cluster_name = 'mcip-router'))).toContain(
      `${extProcPath(doc)}.grpc_service.envoy_grpc.cluster_name: cluster "mcip-router" is not defined in static_resources.clusters`,
    );
  });

  it('a health check naming an undefined cluster', () => {
    const errors = errorsAfter((d) => {
      rename(hcm(d).http_filters[filterIndex(d, HEALTH_CHECK_TYPE)].typed_config.cluster_min_healthy_percentages, 'mcip_router', 'mcip_routr');
    });
    expect(errors).toEqual([expect.stringMatching(/cluster_min_healthy_percentages\["mcip_routr"\]: cluster "mcip_routr" is not defined/)]);
  });

  it('a bad port', () => {
    const sa = 'static_resources.clusters[0].load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address.port_value';
    const set = (v: unknown) => (d: Tree) => (cluster(d, 'mcip_router').load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address.port_value = v);
    expect(errorsAfter(set(70000))).toEqual([`${sa}: must be <= 65535`]);
    expect(errorsAfter(set(-1))).toEqual([`${sa}: uint32 out of range: -1`]);
    expect(errorsAfter(set('grpc'))).toEqual([`${sa}: expected uint32, got string "grpc"`]);
    expect(errorsAfter((d) => (d.admin.address.socket_address.port_value = 65536))).toEqual(['admin.address.socket_address.port_value: must be <= 65535']);
  });

  it('an ORIGINAL_DST cluster without the header switch', () => {
    const errors = errorsAfter((d) => (d.static_resources.clusters[ORIGINAL_DST(d)].original_dst_lb_config.use_http_header = false));
    expect(errors).toEqual(['static_resources.clusters[1].original_dst_lb_config: http_header_name needs use_http_header: true']);
  });
});

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
