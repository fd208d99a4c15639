import { describe, expect, it } from 'vitest';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { EnvoyWriter } from '../../src/extproc/envoy-writer.js';
import { ErrorCode, RouterError } from '../../src/extproc/errors.js';
import { HeldBytes } from '../../src/extproc/held-bytes.js';
import { MemberAnswerRules } from '../../src/config/answer-rules.js';
import { readEppAnswer, type RelayableAnswer } from '../../src/protocol/epp-answer.js';
import { decodeResponse } from '../../src/protocol/codec.js';
import { destinationHeadersResponse, streamedBody } from '../../src/protocol/responses.js';
import { bodyMsg, envoyMsg, FakeEnvoy, headersMsg } from './fakes.js';

const RULES = new MemberAnswerRules().of('cluster-a');

function answer(msg: Buffer): RelayableAnswer {
  const a = readEppAnswer(msg, RULES, 'list');
  if (a.t !== 'answer') throw new Error(a.t);
  return a;
}

/** A producer that records its pauses. */
function flow() {
  const f = { paused: false, pauses: 0, pause: () => { f.paused = true; f.pauses++; }, resume: () => { f.paused = false; } };
  return f;
}

describe('EnvoyWriter', () => {
  it('holds back the current producer while Envoy is backed up, once, and lets it go on drain', () => {
    const envoy = new FakeEnvoy();
    const w = envoy.writer;
    const epp = flow();
    w.record(envoyMsg(headersMsg({ eos: true })));
    w.produceFrom(epp);
    envoy.sendResult = false;
    w.relay(answer(destinationHeadersResponse('request_headers', '10.0.0.1:8000')));
    w.relay(answer(destinationHeadersResponse('request_headers', '10.0.0.1:8000')));
    expect(w.isBackedUp).toBe(true);
    expect(epp.pauses).toBe(1);
    expect(envoy.drainCallbacks).toHaveLength(1);
    expect(envoy.paused).toBe(false); // Envoy's input is not the producer
    envoy.sendResult = true;
    envoy.drain();
    expect(epp.paused).toBe(false);
    expect(w.isBackedUp).toBe(false);
  });

  it('switching producers while backed up lets the old one go and holds the new one', () => {
    const envoy = new FakeEnvoy();
    const w = envoy.writer;
    const epp = flow();
    w.produceFrom(epp);
    envoy.sendResult = false;
    w.record(envoyMsg(headersMsg({ eos: true })));
    w.answerPending();
    expect(epp.paused).toBe(true);
    w.produceFrom(w.input);
    expect(epp.paused).toBe(false);
    expect(envoy.paused).toBe(true);
    envoy.drain();
    expect(envoy.paused).toBe(false);
  });

  it("Envoy's input stays paused until every holder let it go", () => {
    const envoy = new FakeEnvoy();
    envoy.pause();
    envoy.pause();
    envoy.resume();
    expect(envoy.paused).toBe(true);
    envoy.resume();
    expect(envoy.paused).toBe(false);
    envoy.resume(); // unbalanced: ignored
    envoy.pause();
    expect(envoy.paused).toBe(true);
  });

  it('keeps the ledger: relayed echoes let go of held bytes; answerPending answers the rest in order', () => {
    const held = new HeldBytes(1 << 20, 1 << 20);
    const envoy = new FakeEnvoy(undefined, held);
    const w = envoy.writer;
    w.record(envoyMsg(headersMsg()));
    w.record(envoyMsg(bodyMsg('request_body', 'abcdef', true)));
    expect(held.total).toBe(6);
    w.relay(answer(destinationHeadersResponse('request_headers', '10.0.0.1:8000')));
    w.relay(answer(streamedBody('request_body', Buffer.from('abcd'), false)));
    expect(held.total).toBe(2);
    w.answerPending();
    const last = decodeResponse(envoy.sent.at(-1)!).request_body!.response!.body_mutation!.streamed_response!;
    expect([last.body.toString(), last.end_of_stream]).toEqual(['ef', true]);
    expect(held.total).toBe(0);
    expect(w.waits.pendingWork).toBe(false);
  });

  it('writes nothing once closed, and releases what the stream held', () => {
    const held = new HeldBytes(1 << 20, 1 << 20);
    const envoy = new FakeEnvoy(undefined, held);
    const w = envoy.writer;
    w.record(envoyMsg(headersMsg()));
    w.record(envoyMsg(bodyMsg('request_body', 'abc', false)));
    w.close();
    expect(held.total).toBe(0);
    w.answerPending();
    expect(envoy.sent).toHaveLength(0);
  });
});

describe('EnvoyWriter: ending the call', () => {
  function call() {
    const c = {
      written: [] as Buffer[],
      ended: 0,
      errors: [] as { code: number; details: string }[],
      metadata: undefined as never,
      write: (m: Buffer) => (c.written.push(m), true),
      end: () => void c.ended++,
      pause: () => {},
      resume: () => {},
      on: () => c,
      once: () => c,
      emit: (_e: 'error', err: Error) => (c.errors.push(err as never), true),
    };
    return c;
  }

  it('a user-facing error is an immediate response then OK, once', () => {
    const c = call();
    const w = new EnvoyWriter(c);
    w.close(); // the stream closes first, then ends the call
    w.endWith(new RouterError(ErrorCode.NoRoute, 'nope'));
    w.endWith(new RouterError(ErrorCode.NoRoute, 'again'));
    w.end();
    expect(c.written).toHaveLength(1);
    expect(decodeResponse(c.written[0]!).immediate_response!.status!.code).toBe(404);
    expect(c.ended).toBe(1);
  });

  it('an internal error is a gRPC status, no immediate response', () => {
    const c = call();
    const w = new EnvoyWriter(c);
    w.endWith(new RouterError(ErrorCode.Protocol, 'out of order'));
    expect(c.written).toHaveLength(0);
    expect(c.errors[0]!.code).toBe(GrpcStatus.INVALID_ARGUMENT);
  });
});
