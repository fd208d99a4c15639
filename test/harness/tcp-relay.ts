// A TCP relay in front of a server, for killing it the way a crashed process or a lost
// node dies: kill() resets every connection (RST, no HTTP/2 GOAWAY, no RST_STREAM) and
// stops listening, where a gRPC server's own shutdown would say goodbye first.
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';

export interface TcpRelay {
  /** host:port to dial instead of the target. */
  readonly address: string;
  /** Connections relayed so far. */
  readonly connections: number;
  /** Resets every open connection (both sides) and refuses new ones. */
  kill(): void;
  close(): void;
}

export async function startTcpRelay(target: string): Promise<TcpRelay> {
  const [host, port] = splitAddress(target);
  const open = new Set<Socket>();
  let connections = 0;
  const track = (s: Socket): void => {
    open.add(s);
    s.on('close', () => open.delete(s));
    s.on('error', () => undefined);
  };
  const server = createServer((client) => {
    connections++;
    const upstream = connect(port, host);
    track(client);
    track(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port: own } = server.address() as AddressInfo;
  const kill = (): void => {
    server.close();
    for (const s of open) s.resetAndDestroy();
    open.clear();
  };
  return {
    address: `127.0.0.1:${own}`,
    get connections() {
      return connections;
    },
    kill,
    close: kill,
  };
}

function splitAddress(address: string): [string, number] {
  const i = address.lastIndexOf(':');
  return [address.slice(0, i), Number(address.slice(i + 1))];
}
