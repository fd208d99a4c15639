// Event-loop responsiveness probes for "nothing stalls the loop" tests: the
// longest event-loop delay seen while work runs (perf_hooks), and a small
// real HTTP server in this process whose answer time shows whether another
// request on the same loop would still be served.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createServer, request } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';

export interface LoopReport<T> {
  readonly result: T;
  /** Longest event-loop delay while `work` ran (ms). */
  readonly maxDelayMs: number;
  /** Longest round trip of the back-to-back pings sent while `work` ran (ms); 0 without a ping server. */
  readonly maxPingMs: number;
  readonly pings: number;
}

/**
 * Runs `work` and reports the longest event-loop delay seen meanwhile; with a
 * ping server, also sends requests to it back to back until `work` is done
 * (one more after) and reports the slowest answer.
 */
export async function withLoopDelay<T>(work: () => Promise<T>, pinger?: PingServer): Promise<LoopReport<T>> {
  const h = monitorEventLoopDelay({ resolution: 5 });
  h.enable();
  let done = false;
  let maxPingMs = 0;
  let pings = 0;
  const pingLoop = (async () => {
    if (pinger === undefined) return;
    do {
      const last = done;
      maxPingMs = Math.max(maxPingMs, await pinger.ping());
      pings++;
      if (last) break;
    } while (true); // eslint-disable-line no-constant-condition
  })();
  try {
    const result = await work();
    done = true;
    await pingLoop;
    // One more turn so a block at the very end is recorded too.
    await new Promise((r) => setTimeout(r, 15));
    return { result, maxDelayMs: h.max / 1e6, maxPingMs, pings };
  } finally {
    done = true;
    h.disable();
  }
}

export interface PingServer {
  /** Sends one GET over a fresh connection; resolves with its round trip in ms. */
  ping(): Promise<number>;
  stop(): Promise<void>;
}

/** An HTTP server on 127.0.0.1 answering 200 at once: the "unrelated request" of a stall test. */
export async function startPingServer(): Promise<PingServer> {
  const server = createServer((_req, res) => res.end('pong'));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  return {
    ping: () =>
      new Promise<number>((resolve, reject) => {
        const t0 = performance.now();
        const req = request({ host: '127.0.0.1', port, path: '/', agent: false }, (res) => {
          res.resume();
          res.on('end', () => resolve(performance.now() - t0));
        });
        req.on('error', reject);
        req.end();
      }),
    stop: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}
