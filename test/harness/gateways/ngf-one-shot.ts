// NGINX Gateway Fabric in front of an InferencePool. NGINX's njs module posts the whole
// client request (headers and buffered body) to a Go shim in the NGINX pod, adding
// X-EPP-Host ("<endpointPickerRef.name>.<pool namespace>") and X-EPP-Port
// (endpointPickerRef.port.number). For every request the shim opens a new gRPC connection to
// host:port (TLS without verification by default; plaintext or verified by flag), sends
// request_headers (client headers only, lower-cased, as `value` strings, no pseudo-headers,
// end_of_stream when there is no body), then the whole body in one request_body
// (end_of_stream true), half-closes, and reads answers until the server ends the stream.
// No protocol_config, no metadata, no response phase. From the answers it takes only
// request_headers.response.header_mutation.set_headers entries keyed
// x-gateway-destination-endpoint, reading raw_value (the last one wins); dynamic metadata is
// ignored. An immediate_response or a stream error makes the shim answer non-200, which njs
// only logs. NGINX then proxy_passes to the picked address as is (any ip:port); with no
// address, FailOpen falls back to the pool's upstream (NGINX balances it "random two
// least_conn"; the stand-in round-robins) and FailClose (the default) answers 500.
import * as grpc from '@grpc/grpc-js';
import { parseDestination, toHeaderList, type HeaderInput } from '../headers.js';
import { ExternalProcessorClient, type PbProcessingRequest, type PbProcessingResponse } from '../protos.js';
import { poolMembers, type PoolMembers } from './pool-members.js';

export const ENDPOINT_HEADER = 'x-gateway-destination-endpoint';

export interface NgfConfig {
  /** Where the picker listens (the Service's address in a cluster). */
  dial: string;
  /** endpointPickerRef.name and the pool's namespace: the gRPC :authority is "<name>.<namespace>:<port>". */
  serviceName: string;
  namespace: string;
  /** Default 'skip-verify' (the shim's default); 'disabled' = plaintext; { ca } = verified. */
  tls?: 'skip-verify' | 'disabled' | { ca: Buffer };
  failureMode?: 'FailOpen' | 'FailClose'; // default FailClose
  /** The pool's upstream (FailOpen only). */
  members: readonly string[];
  /** njs fetch timeout (js_fetch_timeout, default 60 s). */
  fetchTimeoutMs?: number;
}

export interface NgfRequest {
  method?: string;
  headers?: HeaderInput;
  body?: Buffer | string;
}

export interface NgfResult {
  /** Status the client sees. */
  status: number;
  /** Where NGINX proxied the request, if anywhere. */
  destination?: string;
  /** The address the picker gave (after the shim's reading), '' if none. */
  picked: string;
  /** The pool upstream was used because the picker gave no address (FailOpen). */
  failedOpen: boolean;
  /** Why the shim answered non-200 (immediate response, stream error), if it did. */
  shimError?: string;
  sent: PbProcessingRequest[];
  received: PbProcessingResponse[];
}

export interface NgfGateway {
  readonly members: PoolMembers;
  /** gRPC connections opened so far (one per request). */
  readonly connections: number;
  run(req: NgfRequest): Promise<NgfResult>;
}

function credentials(tls: NgfConfig['tls']): grpc.ChannelCredentials {
  if (tls === 'disabled') return grpc.credentials.createInsecure();
  if (tls === undefined || tls === 'skip-verify') {
    return grpc.credentials.createSsl(null, null, null, { rejectUnauthorized: false, checkServerIdentity: () => undefined });
  }
  return grpc.credentials.createSsl(tls.ca);
}

export function createNgfGateway(cfg: NgfConfig): NgfGateway {
  const pool = poolMembers(cfg.members);
  const creds = credentials(cfg.tls);
  let connections = 0;
  const authorityHost = `${cfg.serviceName}.${cfg.namespace}`;
  const port = cfg.dial.slice(cfg.dial.lastIndexOf(':') + 1);

  async function askPicker(req: NgfRequest, sent: PbProcessingRequest[], received: PbProcessingResponse[]): Promise<{ picked: string; error?: string }> {
    const body = req.body === undefined ? Buffer.alloc(0) : Buffer.from(req.body);
    const headers = [...toHeaderList(req.headers), ['x-epp-host', authorityHost], ['x-epp-port', port]] as [string, string][];
    if (body.length > 0) headers.push(['content-length', String(body.length)]);
    const client = new ExternalProcessorClient(cfg.dial, creds, {
      'grpc.default_authority': `${authorityHost}:${port}`,
      'grpc.ssl_target_name_override': authorityHost,
      'grpc.use_local_subchannel_pool': 1,
    });
    connections++;
    const deadline = Date.now() + (cfg.fetchTimeoutMs ?? 60_000);
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const call = (client as any).Process(new grpc.Metadata(), { deadline }) as grpc.ClientDuplexStream<PbProcessingRequest, PbProcessingResponse>;
    try {
      return await new Promise((resolve) => {
        let picked = '';
        let error: string | undefined;
        call.on('data', (m: PbProcessingResponse) => {
          received.push(m);
          if (m.response === 'immediate_response') {
            // The shim answers njs with that status at once and closes its connection.
            error ??= `immediate response ${m.immediate_response?.status?.code ?? 0}`;
            resolve({ picked: '', error });
            return;
          }
          for (const h of m.request_headers?.response?.header_mutation?.set_headers ?? []) {
            if (h.header?.key === ENDPOINT_HEADER) picked = Buffer.from(h.header.raw_value ?? []).toString('utf8');
          }
        });
        call.on('error', (e: grpc.ServiceError) => resolve({ picked: '', error: error ?? `ext_proc stream: ${e.details || e.message}` }));
        call.on('status', (s: grpc.StatusObject) => {
          if (s.code === grpc.status.OK) resolve(error ? { picked: '', error } : { picked });
        });
        const first: PbProcessingRequest = {
          request_headers: { headers: { headers: headers.map(([key, value]) => ({ key: key.toLowerCase(), value })) }, end_of_stream: body.length === 0 },
        };
        sent.push(first);
        call.write(first);
        if (body.length > 0) {
          const second: PbProcessingRequest = { request_body: { body, end_of_stream: true } };
          sent.push(second);
          call.write(second);
        }
        call.end();
      });
    } finally {
      call.cancel();
      client.close();
    }
  }

  return {
    members: pool,
    get connections() {
      return connections;
    },
    async run(req) {
      const sent: PbProcessingRequest[] = [];
      const received: PbProcessingResponse[] = [];
      const { picked, error } = await askPicker(req, sent, received);
      const base = { picked, sent, received, ...(error ? { shimError: error } : {}) };
      if (picked !== '') {
        const p = parseDestination(picked);
        return p.ok ? { ...base, status: 200, destination: p.address, failedOpen: false } : { ...base, status: 502, failedOpen: false };
      }
      if (cfg.failureMode !== 'FailOpen') return { ...base, status: 500, failedOpen: false };
      const choice = pool.next();
      return 'address' in choice ? { ...base, status: 200, destination: choice.address, failedOpen: true } : { ...base, status: choice.status, failedOpen: true };
    },
  };
}
