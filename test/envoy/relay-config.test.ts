/**
 * envoy/relay.yaml (the relay of a router in the Endpoint Picker role) says what the
 * relay stand-in (test/harness/relay-standin.ts) assumes: request headers only to the
 * verifier, fail closed, the destination chosen only by the verifier's answer, parent
 * destinations over verified TLS, and the ports the router's config names.
 */
import { describe, expect, it } from 'vitest';
import { relaySchema } from '../../src/config/relay-schema.js';
import { RELAY_TOKEN_HEADER } from '../../src/credentials/relay-token.js';
import { DESTINATION_ENDPOINT_HEADER, DESTINATION_KIND_HEADER, DESTINATION_KIND_PARENT } from '../../src/protocol/constants.js';
import { RELAY_FILTER } from '../harness/relay-standin.js';
import { cluster, errorsAfter, extProc, filterIndex, hcm, HEADER_MUTATION_TYPE, EXT_PROC_TYPE, HTTP_OPTIONS_TYPE, loadConfig, RELAY_FILE, RELAY_FILES, RELAY_PARENT_FILE, type Tree } from './config-fixtures.js';

const routes = (d: Tree): Tree[] => hcm(d).route_config.virtual_hosts[0].routes;

describe.each(RELAY_FILES)('envoy/%s', (file) => {
  const doc: Tree = loadConfig(file);

  it('listens on the default endpointPicker.relay.port and calls the verifier on loopback', () => {
    expect(doc.static_resources.listeners[0].address.socket_address).toEqual({ address: '0.0.0.0', port_value: relaySchema.parse({ keyFile: 'k' }).port });
    const verifier = cluster(doc, extProc(doc).grpc_service.envoy_grpc.cluster_name);
    expect(verifier.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address).toEqual({ address: '127.0.0.1', port_value: 9005 });
    expect(verifier.health_checks[0].grpc_health_check.service_name).toBe('envoy.service.ext_proc.v3.ExternalProcessor');
    expect(verifier.typed_extension_protocol_options[HTTP_OPTIONS_TYPE].common_http_protocol_options.max_requests_per_connection).toBeLessThan(1000);
  });

  it('sends the verifier the request headers only, and fails closed', () => {
    const cfg = extProc(doc);
    expect(cfg.processing_mode).toEqual({
      request_header_mode: 'SEND',
      response_header_mode: 'SKIP',
      request_body_mode: 'NONE',
      response_body_mode: 'NONE',
      request_trailer_mode: 'SKIP',
      response_trailer_mode: 'SKIP',
    });
    expect(cfg.failure_mode_allow).toBe(false);
    expect(cfg.allow_mode_override).toBe(false);
    // The stand-in the relay tests run is this filter.
    expect(RELAY_FILTER).toMatchObject({ requestHeaderMode: 'SEND', requestBodyMode: 'NONE', responseHeaderMode: 'SKIP', responseBodyMode: 'NONE', failureModeAllow: false });
  });

  it('drops a client-sent destination and kind before ext_proc; the verifier may touch only them and the token', () => {
    const strip = filterIndex(doc, HEADER_MUTATION_TYPE);
    expect(strip).toBeGreaterThanOrEqual(0);
    expect(strip).toBeLessThan(filterIndex(doc, EXT_PROC_TYPE));
    expect(hcm(doc).http_filters[strip].typed_config.mutations.request_mutations).toEqual([{ remove: DESTINATION_ENDPOINT_HEADER }, { remove: DESTINATION_KIND_HEADER }]);
    const rules = extProc(doc).mutation_rules;
    expect(rules.disallow_all).toBe(true);
    expect(rules.allow_expression.regex).toBe(`^(${[DESTINATION_ENDPOINT_HEADER, DESTINATION_KIND_HEADER, RELAY_TOKEN_HEADER].join('|')})$`);
  });

  it('a typo in it fails validation', () => {
    expect(errorsAfter((d) => (extProc(d).processing_mode.request_body_mode = 'NON'), file)).toEqual([
      expect.stringContaining('processing_mode.request_body_mode: unknown enum value "NON"'),
    ]);
  });
});

describe(`envoy/${RELAY_PARENT_FILE}`, () => {
  const doc: Tree = loadConfig(RELAY_PARENT_FILE);
  it('sends a parent destination over verified TLS without the mark, anything else to the plain ORIGINAL_DST cluster', () => {
    const [parent, other] = routes(doc);
    expect(parent.match.headers).toEqual([{ name: DESTINATION_KIND_HEADER, string_match: { exact: DESTINATION_KIND_PARENT } }]);
    expect(parent.request_headers_to_remove).toEqual([DESTINATION_KIND_HEADER]);
    const tls = cluster(doc, parent.route.cluster);
    expect(tls.transport_socket.typed_config.common_tls_context.validation_context.trusted_ca.filename).toMatch(/^\//);
    expect(tls.typed_extension_protocol_options[HTTP_OPTIONS_TYPE].upstream_http_protocol_options).toEqual({ auto_sni: true, auto_san_validation: true });
    expect(other.match).toEqual({ prefix: '/' });
    const plain = cluster(doc, other.route.cluster);
    expect(plain.transport_socket).toBeUndefined();
    for (const c of [tls, plain]) {
      expect(c.type).toBe('ORIGINAL_DST');
      expect(c.original_dst_lb_config).toEqual({ use_http_header: true, http_header_name: DESTINATION_ENDPOINT_HEADER });
    }
  });
});

describe(`envoy/${RELAY_FILE}`, () => {
  const doc: Tree = loadConfig(RELAY_FILE);

  it('Endpoint mode: no TLS cluster; a parent destination is refused (502) rather than sent in clear, anything else goes to the plain ORIGINAL_DST cluster', () => {
    const [parent, other] = routes(doc);
    expect(parent.match.headers).toEqual([{ name: DESTINATION_KIND_HEADER, string_match: { exact: DESTINATION_KIND_PARENT } }]);
    expect(parent.route).toBeUndefined();
    expect(parent.direct_response.status).toBe(502);
    expect(other.match).toEqual({ prefix: '/' });
    const plain = cluster(doc, other.route.cluster);
    expect(plain.transport_socket).toBeUndefined();
    expect(plain.original_dst_lb_config).toEqual({ use_http_header: true, http_header_name: DESTINATION_ENDPOINT_HEADER });
    expect(JSON.stringify(doc)).not.toContain('trusted_ca');
  });
});
