import { describe, expect, it } from 'vitest';
import { HeldBytes } from '../../src/extproc/held-bytes.js';
import { RouterAnswers } from '../../src/extproc/router-answers.js';
import { destinationHeadersResponse, parentHeadersResponse } from '../../src/protocol/responses.js';
import { fromStruct } from '../../src/protocol/struct.js';
import type { ProcessingResponse, ProtocolConfiguration } from '../../src/protocol/codec.js';
import { bodyMsg, FakeEnvoy, headersMsg, responseHeadersMsg, trailersMsg } from './fakes.js';
import { envoyMsg } from './fakes.js';

const FD: ProtocolConfiguration = { request_body_mode: 4, response_body_mode: 4, send_body_without_waiting_for_header_response: false };
const STREAMED: ProtocolConfiguration = { request_body_mode: 1, response_body_mode: 1, send_body_without_waiting_for_header_response: false };
const PARENT = '10.1.2.3:8080';

function streamed(r: ProcessingResponse, phase: 'request_body' | 'response_body'): { body: string; eos: boolean } {
  const sr = r[phase]?.response?.body_mutation?.streamed_response;
  if (!sr) throw new Error(`not a streamed ${phase} response`);
  return { body: sr.body.toString(), eos: sr.end_of_stream };
}

function expectDestination(r: ProcessingResponse, addr: string): void {
  const cr = r.request_headers?.response;
  expect(cr?.clear_route_cache).toBe(true);
  const set = cr?.header_mutation?.set_headers ?? [];
  expect(set).toHaveLength(1);
  expect(set[0]!.header!.key).toBe('x-gateway-destination-endpoint');
  expect(set[0]!.header!.raw_value.toString()).toBe(addr);
  expect(set[0]!.header!.value).toBe('');
  expect(set[0]!.append?.value ?? false).toBe(false);
  expect(fromStruct(r.dynamic_metadata)).toEqual({ 'envoy.lb': { 'x-gateway-destination-endpoint': addr } });
}

describe('RouterAnswers: the parent destination marker', () => {
  it('parent answers also set x-mcip-destination-kind: parent (raw_value); plain ones do not', () => {
    const keys = (parent: boolean) => {
      const envoy = new FakeEnvoy();
      envoy.drive(new RouterAnswers(envoy, 'parent', parent ? parentHeadersResponse(PARENT) : destinationHeadersResponse('request_headers', PARENT))).message(envoyMsg(headersMsg({ eos: true })));
      return envoy.responses()[0]!.request_headers!.response!.header_mutation!.set_headers.map((o) => [o.header!.key, o.header!.raw_value.toString(), o.header!.value]);
    };
    expect(keys(true)).toEqual([
      ['x-gateway-destination-endpoint', PARENT, ''],
      ['x-mcip-destination-kind', 'parent', ''],
    ]);
    expect(keys(false)).toEqual([['x-gateway-destination-endpoint', PARENT, '']]);
  });
});

describe('RouterAnswers, parent mode, FULL_DUPLEX_STREAMED', () => {
  it('holds the headers response until the body ends, then echoes the body', () => {
    const envoy = new FakeEnvoy();
    const p = envoy.drive(new RouterAnswers(envoy, 'parent', destinationHeadersResponse('request_headers', PARENT)));
    p.message(envoyMsg(headersMsg()));
    p.message(envoyMsg(bodyMsg('request_body', 'ab', false)));
    expect(envoy.sent).toHaveLength(0);
    expect(envoy.decidedOutcome).toBeUndefined();
    p.message(envoyMsg(bodyMsg('request_body', 'cd', true)));
    const rs = envoy.responses();
    expect(envoy.kinds()).toEqual(['request_headers', 'request_body', 'request_body']);
    expectDestination(rs[0]!, PARENT);
    expect(streamed(rs[1]!, 'request_body')).toEqual({ body: 'ab', eos: false });
    expect(streamed(rs[2]!, 'request_body')).toEqual({ body: 'cd', eos: true });
    expect(envoy.decidedOutcome).toBe('parent');
  });

  it('answers headers at once when there is no body', () => {
    const envoy = new FakeEnvoy();
    const p = envoy.drive(new RouterAnswers(envoy, 'parent', destinationHeadersResponse('request_headers', PARENT)));
    p.message(envoyMsg(headersMsg({ eos: true })));
    expect(envoy.kinds()).toEqual(['request_headers']);
  });

  it('with trailers: headers, body echoed without end_of_stream, then the trailers response', () => {
    const envoy = new FakeEnvoy();
    const p = envoy.drive(new RouterAnswers(envoy, 'parent', destinationHeadersResponse('request_headers', PARENT)));
    p.message(envoyMsg(headersMsg()));
    p.message(envoyMsg(bodyMsg('request_body', 'xyz', false)));
    p.message(envoyMsg(trailersMsg('request_trailers')));
    const rs = envoy.responses();
    expect(envoy.kinds()).toEqual(['request_headers', 'request_body', 'request_trailers']);
    expect(streamed(rs[1]!, 'request_body')).toEqual({ body: 'xyz', eos: false });
  });

  it('headers then trailers without body', () => {
    const envoy = new FakeEnvoy();
    const p = envoy.drive(new RouterAnswers(envoy, 'parent', destinationHeadersResponse('request_headers', PARENT)));
    p.message(envoyMsg(headersMsg()));
    p.message(envoyMsg(trailersMsg('request_trailers')));
    expect(envoy.kinds()).toEqual(['request_headers', 'request_trailers']);
  });

  it('sends the headers response early once the held body passes the bound, then streams', () => {
    const envoy = new FakeEnvoy(FD, new HeldBytes(4, 1 << 30));
    const p = envoy.drive(new RouterAnswers(envoy, 'parent', destinationHeadersResponse('request_headers', PARENT)));
    p.message(envoyMsg(headersMsg()));
    p.message(envoyMsg(bodyMsg('request_body', 'abc', false)));
    expect(envoy.sent).toHaveLength(0);
    p.message(envoyMsg(bodyMsg('request_body', 'def', false)));
    expect(envoy.kinds()).toEqual(['request_headers', 'request_body', 'request_body']);
    p.message(envoyMsg(bodyMsg('request_body', 'g', true)));
    const rs = envoy.responses();
    expect(rs.slice(1).map((r) => streamed(r, 'request_body'))).toEqual([
      { body: 'abc', eos: false },
      { body: 'def', eos: false },
      { body: 'g', eos: true },
    ]);
  });

  it('response path: headers CONTINUE, body echoed, trailers answered', () => {
    const envoy = new FakeEnvoy();
    const p = envoy.drive(new RouterAnswers(envoy, 'parent', destinationHeadersResponse('request_headers', PARENT)));
    p.message(envoyMsg(headersMsg({ eos: true })));
    p.message(envoyMsg(responseHeadersMsg()));
    p.message(envoyMsg(bodyMsg('response_body', 'tok1', false)));
    p.message(envoyMsg(bodyMsg('response_body', 'tok2', false)));
    p.message(envoyMsg(trailersMsg('response_trailers')));
    const rs = envoy.responses();
    expect(envoy.kinds()).toEqual(['request_headers', 'response_headers', 'response_body', 'response_body', 'response_trailers']);
    expect(rs[1]!.response_headers?.response?.header_mutation ?? null).toBeNull();
    expect(streamed(rs[2]!, 'response_body')).toEqual({ body: 'tok1', eos: false });
    expect(streamed(rs[3]!, 'response_body')).toEqual({ body: 'tok2', eos: false });
  });

  it('finishes Envoy\'s stream when Envoy half-closes', () => {
    const envoy = new FakeEnvoy();
    const p = envoy.drive(new RouterAnswers(envoy, 'parent', destinationHeadersResponse('request_headers', PARENT)));
    p.message(envoyMsg(headersMsg({ eos: true })));
    p.endOfInput();
    expect(envoy.finished).toBe('parent');
  });

  it('pauses Envoy while its side is backed up', () => {
    const envoy = new FakeEnvoy();
    envoy.sendResult = false;
    const p = envoy.drive(new RouterAnswers(envoy, 'parent', destinationHeadersResponse('request_headers', PARENT)));
    p.message(envoyMsg(headersMsg({ eos: true })));
    expect(envoy.paused).toBe(true);
    p.message(envoyMsg(responseHeadersMsg()));
    expect(envoy.drainCallbacks).toHaveLength(1);
    envoy.sendResult = true;
    envoy.drain();
    expect(envoy.paused).toBe(false);
  });
});

describe('RouterAnswers, other modes', () => {
  it('STREAMED: headers answered at once, each body chunk CONTINUE in order', () => {
    const envoy = new FakeEnvoy(STREAMED);
    const p = envoy.drive(new RouterAnswers(envoy, 'parent', destinationHeadersResponse('request_headers', PARENT)));
    p.message(envoyMsg(headersMsg({ protocol: STREAMED })));
    expect(envoy.kinds()).toEqual(['request_headers']);
    p.message(envoyMsg(bodyMsg('request_body', 'a', false)));
    p.message(envoyMsg(bodyMsg('request_body', 'b', true)));
    p.message(envoyMsg(responseHeadersMsg()));
    p.message(envoyMsg(bodyMsg('response_body', 'c', true)));
    const rs = envoy.responses();
    expect(envoy.kinds()).toEqual(['request_headers', 'request_body', 'request_body', 'response_headers', 'response_body']);
    expect(rs[1]!.request_body?.response?.body_mutation ?? null).toBeNull();
    expect(rs[4]!.response_body?.response?.body_mutation ?? null).toBeNull();
  });

  it('no protocol_config (Envoy before 1.34) is not full duplex', () => {
    const envoy = new FakeEnvoy(null);
    const p = envoy.drive(new RouterAnswers(envoy, 'parent', destinationHeadersResponse('request_headers', PARENT)));
    p.message(envoyMsg(headersMsg({ protocol: null })));
    p.message(envoyMsg(bodyMsg('request_body', 'all', true)));
    expect(envoy.kinds()).toEqual(['request_headers', 'request_body']);
    expectDestination(envoy.responses()[0]!, PARENT);
  });

  it('pass-through: CONTINUE without a destination; full-duplex body echoed at once', () => {
    const envoy = new FakeEnvoy();
    const p = envoy.drive(new RouterAnswers(envoy, 'passthrough'));
    p.message(envoyMsg(bodyMsg('request_body', 'q', true)));
    p.message(envoyMsg(responseHeadersMsg()));
    const rs = envoy.responses();
    expect(envoy.kinds()).toEqual(['request_body', 'response_headers']);
    expect(streamed(rs[0]!, 'request_body')).toEqual({ body: 'q', eos: true });
    p.endOfInput();
    expect(envoy.finished).toBe('passthrough');
  });
});
