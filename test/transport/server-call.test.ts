// H2ServerCall on a real socket: pause() stops the messages of a DATA chunk already received
// (no message is handed on after it), resume() delivers them, and the half-close follows them.
import { connect } from 'node:http2';
import { afterEach, expect, it } from 'vitest';
import { createH2GrpcServer, type H2GrpcServer } from '../../src/transport/h2-server.js';
import type { H2ServerCall } from '../../src/transport/server-call.js';
import { encodeMessage } from '../../src/transport/grpc-frame.js';
import { EXT_PROC_PROCESS_PATH } from '../../src/protocol/constants.js';
import { eventually } from '../helpers/eventually.js';

let server: H2GrpcServer | undefined;
afterEach(async () => {
  server?.destroy();
  server = undefined;
});

it('a pause in a message handler holds back the rest of the chunk until resume; the half-close comes after them', async () => {
  const events: string[] = [];
  let call: H2ServerCall | undefined;
  server = createH2GrpcServer({
    maxMessageBytes: 1 << 20,
    streamResetBurst: 1000,
    streamResetRate: 33,
    process(c) {
      call = c;
      c.on('data', (m: Buffer) => {
        events.push(m.toString());
        if (m.toString() === 'one') c.pause();
      });
      c.on('end', () => events.push('end'));
    },
    healthStatus: () => undefined,
    watch: () => undefined,
  });
  const address = await server.listen('127.0.0.1:0');
  const client = connect(`http://${address}`);
  try {
    const req = client.request({ ':method': 'POST', ':path': EXT_PROC_PROCESS_PATH, 'content-type': 'application/grpc', te: 'trailers' });
    req.on('error', () => undefined);
    req.resume();
    // Three messages in one write (one DATA frame), then the half-close.
    req.end(Buffer.concat(['one', 'two', 'three'].flatMap((s) => encodeMessage(Buffer.from(s)))));
    await eventually(() => expect(events).toEqual(['one']));
    await new Promise((r) => setTimeout(r, 50)); // the frame and the half-close are in; nothing more may come while paused
    expect(events).toEqual(['one']);
    call!.resume();
    expect(events).toEqual(['one', 'two', 'three', 'end']);
    call!.end();
  } finally {
    client.close();
  }
});
