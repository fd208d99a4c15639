import type { EppTarget } from '../../src/snapshot/types.js';

/** An EPP target at `address` ("host:port") from an address override (dialled as written), plaintext unless `tls` says otherwise. */
export function overrideTarget(address: string, tls: Partial<EppTarget['tls']> = {}): EppTarget {
  const [host, port] = address.split(':');
  return {
    address,
    host: host!,
    port: Number(port),
    cluster: 'c',
    service: { namespace: 'ns', name: 'epp' },
    source: 'override',
    tls: { enabled: false, insecureSkipVerify: true, ...tls },
  };
}
