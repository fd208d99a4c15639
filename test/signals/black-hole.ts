// A black-holed member cluster, as seen from the router: a TCP server on
// 127.0.0.1 that accepts connections and then never reads or answers anything
// (gRPC handshakes and HTTP requests hang until the client gives up).
import { createServer, type Socket } from 'node:net';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';

export interface BlackHole {
  readonly address: string;
  readonly port: number;
  readonly connections: number;
  stop(): Promise<void>;
}

export async function startBlackHole(): Promise<BlackHole> {
  const sockets = new Set<Socket>();
  let connections = 0;
  const server = createServer({ pauseOnConnect: true }, (s) => {
    connections++;
    sockets.add(s);
    s.on('error', () => {});
    s.on('close', () => sockets.delete(s));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  return {
    address: `127.0.0.1:${port}`,
    port,
    get connections() { return connections; },
    async stop() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
