/** Parses the listen addresses of the router config: host:port, [v6]:port, unix:/path. */

export type ListenTarget =
  | { readonly type: 'tcp'; readonly host: string; readonly port: number }
  | { readonly type: 'unix'; readonly path: string };

export function parseListenAddress(value: string): ListenTarget {
  if (value.startsWith('unix:')) {
    // unix:/abs/path and unix:///abs/path both name /abs/path.
    const path = value.slice('unix:'.length).replace(/^\/\/(?=\/)/, '');
    if (!path) throw new Error(`listen address "${value}": empty unix socket path`);
    return { type: 'unix', path };
  }
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^\s:[\]]+)):(\d{1,5})$/.exec(value);
  if (!m) throw new Error(`listen address "${value}": expected host:port, [ipv6]:port or unix:/path`);
  const port = Number(m[3]);
  if (port > 65535) throw new Error(`listen address "${value}": port ${port} is out of range`);
  return { type: 'tcp', host: (m[1] ?? m[2]) as string, port };
}
