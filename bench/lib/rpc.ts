/**
 * A tiny request/response protocol over Node's IPC channel between the bench
 * orchestrator and its children (load generator, fast EPP, floor proxy,
 * control-plane runner). A child announces itself with one `ready` message.
 */
import type { ChildProcess } from 'node:child_process';

interface Request {
  readonly rpc: 'call';
  readonly id: number;
  readonly cmd: string;
  readonly args: unknown;
}
interface Reply {
  readonly rpc: 'reply';
  readonly id: number;
  readonly ok: boolean;
  readonly result?: unknown;
  readonly error?: string;
}
interface Ready {
  readonly rpc: 'ready';
  readonly info: unknown;
}
type Message = Request | Reply | Ready;

export type Handlers = Record<string, (args: never) => unknown>;

/** Child side: answer calls with `handlers`, then tell the parent we are ready. */
export function serveRpc(handlers: Handlers, readyInfo: unknown): void {
  const send = process.send?.bind(process);
  if (!send) throw new Error('bench child started without an IPC channel');
  process.on('message', (raw: unknown) => {
    const m = raw as Message;
    if (m.rpc !== 'call') return;
    const handler = handlers[m.cmd];
    Promise.resolve()
      .then(() => {
        if (!handler) throw new Error(`unknown command ${m.cmd}`);
        return (handler as (a: unknown) => unknown)(m.args);
      })
      .then(
        (result) => send({ rpc: 'reply', id: m.id, ok: true, result } satisfies Reply),
        (err: unknown) => send({ rpc: 'reply', id: m.id, ok: false, error: err instanceof Error ? (err.stack ?? err.message) : String(err) } satisfies Reply),
      );
  });
  // The orchestrator going away must not leave children behind.
  process.on('disconnect', () => process.exit(0));
  send({ rpc: 'ready', info: readyInfo } satisfies Ready);
}

/** Parent side of one child. */
export class RpcClient {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  readonly ready: Promise<unknown>;

  constructor(
    private readonly child: ChildProcess,
    private readonly name: string,
  ) {
    this.ready = new Promise((resolve, reject) => {
      child.on('message', (raw: unknown) => {
        const m = raw as Message;
        if (m.rpc === 'ready') resolve(m.info);
        else if (m.rpc === 'reply') {
          const p = this.pending.get(m.id);
          if (!p) return;
          this.pending.delete(m.id);
          if (m.ok) p.resolve(m.result);
          else p.reject(new Error(`${name}: ${m.error}`));
        }
      });
      child.on('exit', (code, signal) => {
        const err = new Error(`${name} exited (${code ?? signal})`);
        reject(err);
        for (const p of this.pending.values()) p.reject(err);
        this.pending.clear();
      });
    });
    this.ready.catch(() => undefined);
  }

  call<T>(cmd: string, args: unknown = {}): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.child.send({ rpc: 'call', id, cmd, args } satisfies Request, (err) => {
        if (err) {
          this.pending.delete(id);
          reject(new Error(`${this.name}: cannot send ${cmd}: ${err.message}`));
        }
      });
    });
  }
}
