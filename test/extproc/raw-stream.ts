// A bare ext_proc client for the router: writes encoded ProcessingRequests exactly as given
// (in any order, or none) and records what comes back and the call's status.
import * as grpc from '@grpc/grpc-js';
import { EXT_PROC_PROCESS_PATH } from '../../src/protocol/constants.js';
import { decodeResponse, encodeRequest, type Init, type ProcessingRequest } from '../../src/protocol/codec.js';

export interface RawStream {
  write(msg: Init<ProcessingRequest>): void;
  end(): void;
  cancel(): void;
  /** Response cases received so far. */
  readonly received: string[];
  readonly immediateStatus: () => number | undefined;
  /** The call's final status (code, details). */
  readonly status: Promise<{ code: number; details: string }>;
}

const identity = (b: Buffer): Buffer => b;

export function rawStream(client: grpc.Client): RawStream {
  const call = client.makeBidiStreamRequest(EXT_PROC_PROCESS_PATH, identity, identity);
  const received: string[] = [];
  let immediate: number | undefined;
  call.on('data', (b: Buffer) => {
    const r = decodeResponse(b);
    received.push(r.response ?? 'none');
    if (r.immediate_response) immediate = r.immediate_response.status?.code;
  });
  const status = new Promise<{ code: number; details: string }>((resolve) => {
    call.on('status', (s: grpc.StatusObject) => resolve({ code: s.code, details: s.details }));
  });
  call.on('error', () => {});
  return {
    write: (msg) => call.write(encodeRequest(msg)),
    end: () => call.end(),
    cancel: () => call.cancel(),
    received,
    immediateStatus: () => immediate,
    status,
  };
}

export function rawClient(address: string): grpc.Client {
  return new grpc.Client(address, grpc.credentials.createInsecure());
}

/** Request headers for `authority`, full duplex both ways. */
export function requestHeaders(authority: string, endOfStream = false): Init<ProcessingRequest> {
  return {
    request_headers: {
      headers: { headers: [{ key: ':authority', raw_value: Buffer.from(authority) }, { key: ':path', raw_value: Buffer.from('/v1/completions') }, { key: ':method', raw_value: Buffer.from('POST') }] },
      end_of_stream: endOfStream,
    },
    protocol_config: { request_body_mode: 4, response_body_mode: 4 },
  };
}

export const body = (phase: 'request_body' | 'response_body', bytes: Buffer | string, eos: boolean): Init<ProcessingRequest> => ({
  [phase]: { body: Buffer.from(bytes), end_of_stream: eos },
});
