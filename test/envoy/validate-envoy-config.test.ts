/**
 * The validator itself: proto3 JSON mapping rules, well-known types, the
 * snapshot's missing enum values, and the checks Envoy makes in code.
 */
import fs from 'node:fs';
import path from 'node:path';
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { cluster, errorsAfter, extProc, extProcPath, filterIndex, hcm, HCM_PATH, HTTP_OPTIONS_TYPE, loadConfig, rename, route, type Tree } from './config-fixtures.js';
import { includeRoots, NEWER_ENUM_VALUES } from './proto-registry.js';
import { formatError, validateEnvoyYaml } from './validate-envoy-config.js';

const ROUTER_EP = 'static_resources.clusters[0].load_assignment.endpoints[0].lb_endpoints[0].endpoint';
const routerEndpoint = (d: Tree): Tree => cluster(d, 'mcip_router').load_assignment.endpoints[0].lb_endpoints[0].endpoint;

describe('proto3 JSON mapping', () => {
  it('accepts lowerCamelCase field names and reports a field set under both spellings', () => {
    expect(errorsAfter((d) => rename(extProc(d), 'failure_mode_allow', 'failureModeAllow'))).toEqual([]);
    expect(errorsAfter((d) => rename(d, 'static_resources', 'staticResources'))).toEqual([]);
    const both = errorsAfter((d) => (extProc(d).allowModeOverride = true));
    expect(both).toEqual([expect.stringMatching(/allowModeOverride: field set twice \(as "allow_mode_override" and "allowModeOverride"\)$/)]);
  });

  it('accepts enum numbers that exist and rejects those that do not', () => {
    expect(errorsAfter((d) => (extProc(d).processing_mode.request_header_mode = 1))).toEqual([]);
    const doc = loadConfig();
    expect(errorsAfter((d) => (extProc(d).processing_mode.request_header_mode = 7))).toEqual([
      `${extProcPath(doc)}.processing_mode.request_header_mode: unknown enum number 7 for envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.HeaderSendMode`,
    ]);
  });

  it('accepts integers as decimal strings (proto3 JSON) but not as floats or lists', () => {
    const at = (v: unknown) => (d: Tree) => (cluster(d, 'mcip_router').circuit_breakers.thresholds[0].max_requests = v);
    expect(errorsAfter(at('65536'))).toEqual([]);
    expect(errorsAfter(at([1]))).toEqual(['static_resources.clusters[0].circuit_breakers.thresholds[0].max_requests: expected a single value, got a list']);
  });

  it('takes wrappers as plain scalars, not as {value: ...}', () => {
    expect(errorsAfter((d) => (hcm(d).use_remote_address = { value: true }))).toEqual([
      `${HCM_PATH}.use_remote_address: google.protobuf.BoolValue takes a plain bool, not an object`,
    ]);
  });

  it('tells repeated from singular and checks map fields', () => {
    expect(errorsAfter((d) => (hcm(d).http_filters = hcm(d).http_filters[0]))).toContain(`${HCM_PATH}.http_filters: expected a list, got an object`);
    expect(errorsAfter((d) => (cluster(d, 'mcip_router').typed_extension_protocol_options = []))).toContain(
      'static_resources.clusters[0].typed_extension_protocol_options: expected a map (object), got a list',
    );
    const bad = errorsAfter((d) => rename(cluster(d, 'mcip_router').typed_extension_protocol_options, HTTP_OPTIONS_TYPE, 'envoy.extensions.upstreams.http.v3.HttpProtocolOption'));
    expect(bad).toContainEqual(expect.stringContaining('["envoy.extensions.upstreams.http.v3.HttpProtocolOption"]: key must be "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"'));
  });

  it('allows at most one member of a oneof, and requires one where PGV says so', () => {
    expect(errorsAfter((d) => (routerEndpoint(d).address.pipe = { path: '/tmp/x.sock' }))).toEqual([
      `${ROUTER_EP}.address: oneof "address" allows one of [socket_address, pipe, envoy_internal_address], got socket_address and pipe`,
    ]);
    expect(errorsAfter((d) => (routerEndpoint(d).address = {}))).toEqual([`${ROUTER_EP}.address: oneof "address" needs one of [socket_address, pipe, envoy_internal_address]`]);
  });

  it('accepts any Struct body and validates Any bodies recursively', () => {
    const log = (d: Tree): Tree => hcm(d).access_log[0].typed_config.log_format;
    expect(errorsAfter((d) => (log(d).json_format.nested = { n: 1, list: [true, null], s: 'x' }))).toEqual([]);
    expect(errorsAfter((d) => rename(log(d), 'json_format', 'json_formt'))).toEqual([
      expect.stringMatching(/access_log\[0\]\.typed_config\.log_format\.json_formt: unknown field "json_formt"/),
      expect.stringMatching(/log_format: oneof "format" needs one of/),
    ]);
    expect(errorsAfter((d) => delete extProc(d)['@type'])).toEqual([expect.stringMatching(/typed_config\.@type: typed config needs "@type"/)]);
  });

  it('validates a TypedStruct body against its type_url', () => {
    const wrap = (typo: boolean) => (d: Tree): void => {
      const filter = hcm(d).http_filters[filterIndex(d, 'envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor')];
      const { ['@type']: url, ...body } = filter.typed_config;
      if (typo) rename(body, 'message_timeout', 'message_timout');
      filter.typed_config = { '@type': 'type.googleapis.com/xds.type.v3.TypedStruct', type_url: url, value: body };
    };
    expect(errorsAfter(wrap(false))).toEqual([]);
    expect(errorsAfter(wrap(true))).toEqual([expect.stringMatching(/typed_config\.value\.message_timout: unknown field/)]);
  });

  it('reports YAML syntax errors and duplicate keys', () => {
    expect(validateEnvoyYaml('admin: [').map(formatError)[0]).toMatch(/^: YAML: /);
    expect(validateEnvoyYaml('admin: {}\nadmin: {}\n').map(formatError)[0]).toMatch(/YAML: Map keys must be unique/);
  });
});

describe('newer Envoy values the snapshot lacks', () => {
  it('the shipped processing_mode.proto has no FULL_DUPLEX_STREAMED; the validator adds exactly the listed values', () => {
    const file = includeRoots()
      .map((r) => path.join(r, 'envoy/extensions/filters/http/ext_proc/v3/processing_mode.proto'))
      .find((f) => fs.existsSync(f))!;
    const raw = protobuf.parse(fs.readFileSync(file, 'utf8'), { keepCase: true }).root;
    const values = raw.lookupEnum('envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode').values;
    expect(values['FULL_DUPLEX_STREAMED']).toBeUndefined();
    expect(NEWER_ENUM_VALUES.map((v) => `${v.value}=${v.number}`)).toEqual(['FULL_DUPLEX_STREAMED=4', 'GRPC=5']);
  });

  it('accepts the added names and numbers and still rejects unknown ones', () => {
    expect(errorsAfter((d) => (extProc(d).processing_mode.response_body_mode = 'GRPC'))).toEqual([]);
    expect(errorsAfter((d) => (extProc(d).processing_mode.response_body_mode = 4))).toEqual([]);
    expect(errorsAfter((d) => (extProc(d).processing_mode.response_body_mode = 6))).toHaveLength(1);
    expect(errorsAfter((d) => (extProc(d).processing_mode.response_body_mode = 'FULL_DUPLEX'))).toHaveLength(1);
  });
});

describe('addresses', () => {
  const setAddress = (v: string) => (d: Tree) => (routerEndpoint(d).address.socket_address.address = v);

  it('accepts IPv4 and IPv6 literals', () => {
    expect(errorsAfter(setAddress('::1'))).toEqual([]);
    expect(errorsAfter((d) => (d.static_resources.listeners[0].address.socket_address = { address: '::', port_value: 8080, ipv4_compat: true }))).toEqual([]);
  });

  it('rejects malformed addresses and host names outside DNS clusters', () => {
    for (const bad of ['127.0.0.256', '[::1]', 'localhost', '127.0.0.1:9002']) {
      expect(errorsAfter(setAddress(bad))).toEqual([`${ROUTER_EP}.address.socket_address.address: "${bad}" is not an IPv4 or IPv6 address`]);
    }
    expect(errorsAfter(setAddress(''))).toEqual([`${ROUTER_EP}.address.socket_address.address: must not be empty`]);
  });

  it('allows host names in STRICT_DNS clusters', () => {
    const dns = (d: Tree): void => {
      cluster(d, 'mcip_router').type = 'STRICT_DNS';
      routerEndpoint(d).address.socket_address.address = 'mcip-router.default.svc.cluster.local';
    };
    expect(errorsAfter(dns)).toEqual([]);
  });

  it('wants absolute pipe paths', () => {
    const pipe = (p: string) => (d: Tree) => (routerEndpoint(d).address = { pipe: { path: p } });
    expect(errorsAfter(pipe('/var/run/mcip/extproc.sock'))).toEqual([]);
    expect(errorsAfter(pipe('var/run/x.sock'))).toEqual([`${ROUTER_EP}.address.pipe.path: pipe path "var/run/x.sock" must be absolute (or @abstract)`]);
  });
});

describe('rules Envoy enforces at startup', () => {
  it('requires HTTP/2 on a cluster that carries gRPC', () => {
    const errors = errorsAfter((d) => delete cluster(d, 'mcip_router').typed_extension_protocol_options);
    expect(errors).toEqual([
      'static_resources.clusters[0].health_checks: gRPC health checks need an HTTP/2 cluster (typed_extension_protocol_options with http2_protocol_options)',
      `${extProcPath(loadConfig())}.grpc_service.envoy_grpc.cluster_name: cluster "mcip_router" carries gRPC but is not HTTP/2`,
    ]);
  });

  it('keeps the router filter last', () => {
    const errors = errorsAfter((d) => hcm(d).http_filters.reverse());
    expect(errors).toContain(`${HCM_PATH}.http_filters[0]: the router filter must be the last HTTP filter`);
  });

  it('enforces PGV required fields', () => {
    expect(errorsAfter((d) => delete extProc(d).grpc_service)).toEqual([`${extProcPath(loadConfig())}.grpc_service: required field is missing`]);
    expect(errorsAfter((d) => delete cluster(d, 'mcip_router').name)).toContain('static_resources.clusters[0].name: must not be empty (field is missing)');
  });

  it('rejects deprecated fields', () => {
    const errors = errorsAfter((d) => (cluster(d, 'mcip_router').http2_protocol_options = {}));
    expect(errors).toEqual(['static_resources.clusters[0].http2_protocol_options: deprecated field "http2_protocol_options" in envoy.config.cluster.v3.Cluster']);
  });

  it('rejects duplicate cluster names and an ORIGINAL_DST cluster with another lb_policy', () => {
    expect(errorsAfter((d) => (cluster(d, 'original_destination').name = 'mcip_router'))).toContain('static_resources.clusters[1].name: duplicate cluster name "mcip_router"');
    expect(errorsAfter((d) => (cluster(d, 'original_destination').lb_policy = 'ROUND_ROBIN'))).toEqual([
      'static_resources.clusters[1].lb_policy: an ORIGINAL_DST cluster needs lb_policy CLUSTER_PROVIDED',
    ]);
    expect(errorsAfter((d) => (route(d).route.timeout = '0s'))).toEqual([]);
  });
});
