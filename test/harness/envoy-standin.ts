// Envoy stand-in: an ext_proc *client* behaving like Envoy's ext_proc filter followed by a
// router to an ORIGINAL_DST cluster keyed on x-gateway-destination-endpoint
// (docs/protocol.md §1 and §3). One gRPC channel serves many requests.
import { randomUUID } from 'node:crypto';
import { isIP } from 'node:net';
import { checkServerIdentity } from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import { getHeader, parseDestination, removeHeader, toHeaderList, type HeaderList } from './headers.js';
import {
  DEFAULT_MAX_MESSAGE_BYTES,
  ExternalProcessorClient,
  type JsonObject,
  type PbProcessingRequest,
  type PbProcessingResponse,
} from './protos.js';
import { Halt, localReply, type DirectionModes, type FilterContext, type HttpMessage, type LocalReply } from './standin-context.js';
import { DirectionRun } from './standin-direction.js';
import { StandinStream } from './standin-stream.js';
import type {
  BodyInput,
  EnvoyStandin,
  ForwardedRequest,
  HostChoice,
  HostSelectionInput,
  StandinClientOptions,
  StandinOptions,
  StandinRequest,
  StandinResult,
  UpstreamResponse,
} from './standin-types.js';

export type * from './standin-types.js';
export type { HeaderInput, HeaderList } from './headers.js';
export type { BodyMode } from './protos.js';
export type { WireRecord } from './standin-stream.js';
export { getHeader, getHeaderAll, toHeaderList } from './headers.js';

export const DESTINATION_HEADER = 'x-gateway-destination-endpoint';

const NO_HEALTHY_UPSTREAM = 'no healthy upstream';

function toChunks(b: BodyInput | undefined): Buffer[] {
  if (b === undefined) return [];
  if (typeof b === 'string') return [Buffer.from(b)];
  return Buffer.isBuffer(b) ? [b] : b.map((c) => (typeof c === 'string' ? Buffer.from(c) : c));
}

function modes(o: StandinOptions, dir: 'request' | 'response'): DirectionModes {
  const m: DirectionModes =
    dir === 'request'
      ? { header: o.requestHeaderMode ?? 'SEND', body: o.requestBodyMode ?? 'FULL_DUPLEX_STREAMED', trailer: o.requestTrailerMode ?? 'SEND' }
      : { header: o.responseHeaderMode ?? 'SEND', body: o.responseBodyMode ?? 'FULL_DUPLEX_STREAMED', trailer: o.responseTrailerMode ?? 'SEND' };
  if (m.body === 'FULL_DUPLEX_STREAMED' && m.trailer !== 'SEND') {
    throw new Error(`envoy stand-in config: ${dir} FULL_DUPLEX_STREAMED requires ${dir} trailer mode SEND`);
  }
  return m;
}

/** Envoy drops content-length where the processor may change the body length unseen. */
function removesContentLength(m: DirectionModes): boolean {
  return ['STREAMED', 'BUFFERED_PARTIAL', 'FULL_DUPLEX_STREAMED'].includes(m.body) || (m.body === 'BUFFERED' && m.header === 'SKIP');
}

/** Headers as Envoy sends them to ext_proc: pseudo-headers first, then the client's, then Envoy's own. */
export function buildRequestHeaders(req: StandinRequest, envoyAdded: boolean): HeaderList {
  const scheme = req.scheme ?? 'http';
  const list: HeaderList = [
    [':authority', req.authority],
    [':path', req.path],
    [':method', req.method ?? 'POST'],
    [':scheme', scheme],
    ...toHeaderList(req.headers),
  ];
  if (envoyAdded) {
    if (!getHeader(list, 'x-forwarded-proto')) list.push(['x-forwarded-proto', scheme]);
    if (!getHeader(list, 'x-request-id')) list.push(['x-request-id', randomUUID()]);
  }
  return list;
}

export function createEnvoyStandin(target: string, copts: StandinClientOptions = {}): EnvoyStandin {
  const max = copts.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
  // Envoy sends no SNI unless configured; grpc-js always sends one, and Node 26 refuses an IP:
  // to an IP target without serverName, send "localhost" and verify the certificate for the IP.
  const ipHost = targetIp(target);
  const verifyIp = copts.tls && !copts.tls.serverName && ipHost !== undefined ? ipHost : undefined;
  const creds = copts.tls
    ? grpc.credentials.createSsl(copts.tls.ca, null, null, verifyIp === undefined ? {} : { checkServerIdentity: (_sni, cert) => checkServerIdentity(verifyIp, cert) })
    : grpc.credentials.createInsecure();
  const options: grpc.ChannelOptions = {
    'grpc.max_receive_message_length': max,
    'grpc.max_send_message_length': max,
    // Envoy connects on demand per stream; keep grpc-js's reconnect backoff short to match.
    'grpc.initial_reconnect_backoff_ms': 50,
    'grpc.max_reconnect_backoff_ms': 500,
    ...(copts.tls?.serverName ? { 'grpc.ssl_target_name_override': copts.tls.serverName } : {}),
    ...(verifyIp !== undefined ? { 'grpc.ssl_target_name_override': 'localhost' } : {}),
    ...copts.channelOptions,
  };
  const every = copts.maxRequestsPerConnection;
  if (every === undefined) {
    const client = new ExternalProcessorClient(target, creds, options);
    return {
      run: (req, opts = {}) => runOnClient(client, req, opts),
      close: () => client.close(),
    };
  }
  if (!Number.isInteger(every) || every < 1) throw new Error(`maxRequestsPerConnection must be a positive integer, got ${every}`);
  return rotatingStandin(() => new ExternalProcessorClient(target, creds, { ...options, 'grpc.use_local_subchannel_pool': 1 }), every);
}

/** The IP of a "host:port" / "[v6]:port" target, or undefined for a name or a unix socket. */
function targetIp(target: string): string | undefined {
  const host = target.replace(/:\d+$/, '').replace(/^\[|\]$/g, '');
  return isIP(host) === 0 ? undefined : host;
}

/** One HTTP/2 connection of a rotating stand-in: its channel, streams started on it, streams still open. */
interface Connection {
  readonly client: grpc.Client;
  started: number;
  inFlight: number;
  draining: boolean;
}

/**
 * Envoy's `max_requests_per_connection` on the processor cluster: after `every` streams a
 * connection takes no new ones (drains) and closes once its open streams are done; the next
 * stream opens a new connection. Each channel has its own subchannel pool, so a new channel
 * really is a new connection (grpc-js shares subchannels between equal channels otherwise).
 */
function rotatingStandin(newClient: () => grpc.Client, every: number): EnvoyStandin {
  let current: Connection | undefined;
  const open = new Set<Connection>();
  let connections = 0;
  const retire = (c: Connection): void => {
    c.draining = true;
    if (c.inFlight === 0) {
      open.delete(c);
      c.client.close();
    }
  };
  const acquire = (): Connection => {
    if (current === undefined || current.started >= every) {
      if (current) retire(current);
      current = { client: newClient(), started: 0, inFlight: 0, draining: false };
      open.add(current);
      connections++;
    }
    current.started++;
    current.inFlight++;
    return current;
  };
  return {
    async run(req, opts = {}) {
      const c = acquire();
      try {
        return await runOnClient(c.client, req, opts);
      } finally {
        c.inFlight--;
        if (c.draining && c.inFlight === 0) retire(c);
      }
    },
    close() {
      for (const c of open) c.client.close();
      open.clear();
      current = undefined;
    },
    get connectionsOpened() {
      return connections;
    },
  };
}

/** One request over a fresh channel (closed afterwards). */
export async function runRequest(
  target: string,
  req: StandinRequest,
  opts: StandinOptions = {},
  copts: StandinClientOptions = {},
): Promise<StandinResult> {
  const s = createEnvoyStandin(target, copts);
  try {
    return await s.run(req, opts);
  } finally {
    s.close();
  }
}

/** ORIGINAL_DST with use_http_header: the first x-gateway-destination-endpoint value, any ip:port. */
export function originalDst({ headers }: HostSelectionInput): HostChoice {
  const value = getHeader(headers, DESTINATION_HEADER);
  const parsed = value === undefined ? undefined : parseDestination(value);
  if (parsed?.ok) return { address: parsed.address };
  const why = parsed ? `invalid ${DESTINATION_HEADER}: ${parsed.error}` : `no ${DESTINATION_HEADER} header`;
  return { status: 503, body: NO_HEALTHY_UPSTREAM, reason: `${NO_HEALTHY_UPSTREAM} (${why})`, details: 'no_healthy_upstream' };
}

async function runOnClient(client: grpc.Client, req: StandinRequest, o: StandinOptions): Promise<StandinResult> {
  const reqModes = modes(o, 'request');
  const respModes = modes(o, 'response');
  const md = new grpc.Metadata();
  for (const [k, v] of Object.entries(o.grpcMetadata ?? {})) md.set(k, v);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const factory = () => (client as any).Process(md) as grpc.ClientDuplexStream<PbProcessingRequest, PbProcessingResponse>;
  const stream = new StandinStream(factory, o.signal, o.onWire);
  const dynamicMetadata: Record<string, JsonObject> = structuredClone(o.metadataContext ?? {});
  const ctx: FilterContext = {
    stream,
    processingComplete: false,
    firstMessageSent: false,
    sendProtocolConfig: o.sendProtocolConfig ?? true,
    protocolConfig: { request: reqModes.body, response: respModes.body, sendBodyWithoutWaiting: o.sendBodyWithoutWaitingForHeaderResponse ?? false },
    failureModeAllow: o.failureModeAllow ?? false,
    messageTimeoutMs: o.messageTimeoutMs ?? 200,
    streamIdleTimeoutMs: o.streamIdleTimeoutMs ?? 15_000,
    receivingNamespaces: o.receivingNamespaces ?? ['envoy.lb'],
    forwardingNamespaces: o.forwardingNamespaces ?? Object.keys(o.metadataContext ?? {}),
    dynamicMetadata,
    attributes: { request: o.attributes, response: o.responseAttributes },
    attributesSent: {},
    routeCacheCleared: false,
    fdBodySent: false,
  };
  const result: StandinResult = {
    outcome: 'forwarded',
    status: 0,
    dynamicMetadata,
    routeCacheCleared: false,
    response: { status: 0, headers: [], body: Buffer.alloc(0) },
    messages: stream.wire,
  };
  const finish = (): StandinResult => {
    stream.close();
    result.routeCacheCleared = ctx.routeCacheCleared;
    if (ctx.detachedReason) result.processorDropped = ctx.detachedReason;
    result.status = result.response.status;
    return result;
  };
  const setLocal = (r: LocalReply): StandinResult => {
    result.outcome = 'local-reply';
    result.reason = r.reason;
    result.details = r.details;
    result.response = { status: r.status, headers: r.headers, body: r.body };
    return finish();
  };
  if (o.signal?.aborted) {
    result.outcome = 'reset';
    result.reason = 'client reset the request';
    return finish();
  }

  // ---- request path -------------------------------------------------------------------
  let upstreamReq: HttpMessage;
  try {
    const trailers = req.trailers ? toHeaderList(req.trailers) : undefined;
    const input: HttpMessage = { headers: buildRequestHeaders(req, o.envoyAddedHeaders ?? true), body: toChunks(req.body), trailers };
    upstreamReq = await new DirectionRun(ctx, 'request', input, reqModes).run();
  } catch (e) {
    if (!(e instanceof Halt)) throw e;
    if (e.kind === 'reset') {
      result.outcome = 'reset';
      result.reason = e.reason;
      return finish();
    }
    return setLocal(e.reply!);
  }
  if (removesContentLength(reqModes)) upstreamReq.headers = removeHeader(upstreamReq.headers, 'content-length');

  // ---- ORIGINAL_DST host selection and the upstream -----------------------------------
  const destHeader = getHeader(upstreamReq.headers, DESTINATION_HEADER);
  result.destinationHeader = destHeader;
  let upstreamResp: HttpMessage;
  let routerLocal: LocalReply | undefined;
  const choice = (o.hostSelector ?? originalDst)({ headers: upstreamReq.headers, dynamicMetadata: ctx.dynamicMetadata });
  if ('status' in choice) {
    routerLocal = localReply(choice.status, choice.body, choice.reason, choice.details);
    upstreamResp = { headers: [[':status', String(choice.status)], ...routerLocal.headers], body: [routerLocal.body] };
  } else {
    const destination = choice.address;
    result.destination = destination;
    result.upstreamHeaders = upstreamReq.headers;
    result.upstreamTrailers = upstreamReq.trailers;
    result.forwardedBody = Buffer.concat(upstreamReq.body);
    const fwd: ForwardedRequest = { headers: upstreamReq.headers, body: result.forwardedBody, trailers: upstreamReq.trailers };
    let r: UpstreamResponse;
    try {
      r = req.upstream
        ? await req.upstream(destination, fwd)
        : req.response ?? { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ destination }) };
    } catch (err) {
      r = { status: 503, headers: { 'content-type': 'text/plain' }, body: `upstream connect error: ${String(err)}` };
    }
    const st = r.status ?? 200;
    upstreamResp = {
      headers: [[':status', String(st)], ...toHeaderList(r.headers)],
      body: toChunks(r.body),
      trailers: r.trailers ? toHeaderList(r.trailers) : undefined,
    };
    if (o.servedEndpointMetadata) {
      ctx.dynamicMetadata['envoy.lb'] = { ...(ctx.dynamicMetadata['envoy.lb'] ?? {}), [`${DESTINATION_HEADER}-served`]: destination };
      if (!ctx.forwardingNamespaces.includes('envoy.lb')) ctx.forwardingNamespaces.push('envoy.lb');
    }
  }

  // ---- response path (router local replies pass through the filter too) --------------
  const run = new DirectionRun(ctx, 'response', upstreamResp, respModes);
  try {
    const respActive = !ctx.processingComplete;
    const out = await run.run();
    if (respActive && removesContentLength(respModes)) out.headers = removeHeader(out.headers, 'content-length');
    const status = Number(getHeader(out.headers, ':status') ?? '0');
    result.response = { status, headers: removeHeader(out.headers, ':status'), body: Buffer.concat(out.body), trailers: out.trailers };
    if (routerLocal) {
      result.outcome = 'local-reply';
      result.reason = routerLocal.reason;
      result.details = routerLocal.details;
    }
    return finish();
  } catch (e) {
    if (!(e instanceof Halt)) throw e;
    if (e.kind === 'local' && !run.committed) return setLocal(e.reply!);
    // Response headers already went to the client: Envoy can only reset the stream.
    result.outcome = 'reset';
    result.reason = e.reason;
    const sent = run.currentHeaders;
    const st = Number(getHeader(sent, ':status') ?? '0');
    result.response = { status: st, headers: removeHeader(sent, ':status'), body: Buffer.alloc(0) };
    return finish();
  }
}
