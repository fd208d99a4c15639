// Event-loop responsiveness probes for "nothing stalls the loop" tests: the
// longest event-loop delay seen while work runs, and a small real HTTP server
// in this process whose answer time shows whether another request on the same
// loop would still be served. Both are measured as work (test/helpers/work-time.ts):
// a delay counts only as far as this process spent CPU time in it, so a loaded
// machine that runs other processes in between (CI runs test files in parallel
// on 2 cores) does not look like a stall, while code that holds the loop burns
// CPU for as long as it holds it and does.
import { timeWorkAsync } from '../helpers/work-time.js';
import { createServer, request } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';

export interface LoopReport<T> {
  readonly result: T;
  /** Longest event-loop delay while `work` ran (ms: the smaller of the wall-clock delay and the CPU time spent in it). */
  readonly maxDelayMs: number;
  /** Longest wall-clock event-loop delay while `work` ran (ms), for messages: it includes time the machine ran other processes. */
  readonly maxWallDelayMs: number;
  /** Longest round trip of the back-to-back pings sent while `work` ran (ms, as maxDelayMs); 0 without a ping server. */
  readonly maxPingMs: number;
  readonly pings: number;
}

/**
 * Runs `work` and reports the longest event-loop delay seen meanwhile; with a
 * ping server, also sends requests to it back to back until `work` is done
 * (one more after) and reports the slowest answer.
 */
export async function withLoopDelay<T>(work: () => Promise<T>, pinger?: PingServer): Promise<LoopReport<T>> {
  const h = loopDelayMeter(5);
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
    return { result, maxDelayMs: h.maxMs(), maxWallDelayMs: h.maxWallMs(), maxPingMs, pings };
  } finally {
    done = true;
    h.stop();
  }
}

/**
 * A timer every `resolutionMs`; each turn's delay is how late it fired, counted as the
 * smaller of that lateness and the process's CPU time since the timer was set.
 */
function loopDelayMeter(resolutionMs: number) {
  let max = 0;
  let maxWall = 0;
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    timer = setTimeout(() => {
      const late = Math.max(0, performance.now() - t0 - resolutionMs);
      const cpu = process.cpuUsage(cpu0);
      maxWall = Math.max(maxWall, late);
      max = Math.max(max, Math.min(late, (cpu.user + cpu.system) / 1000));
      arm();
    }, resolutionMs);
  };
  arm();
  return {
    maxMs: () => max,
    maxWallMs: () => maxWall,
    stop: () => clearTimeout(timer),
  };
}

export interface PingServer {
  /** Sends one GET over a fresh connection; resolves with its round trip in ms (the smaller of wall-clock and CPU time). */
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
    ping: async () =>
      (
        await timeWorkAsync(
          () =>
            new Promise<void>((resolve, reject) => {
              const req = request({ host: '127.0.0.1', port, path: '/', agent: false }, (res) => {
                res.resume();
                res.on('end', () => resolve());
              });
              req.on('error', reject);
              req.end();
            }),
        )
      ).ms,
    stop: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}
