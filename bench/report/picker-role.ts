/** The Endpoint Picker role cell's part of the Markdown summary (bench/picker-role.ts). */
import type { PickerRoleResults } from '../lib/types.js';
import { cellRows, n, table } from './tables.js';

const signed = (v: number, d = 3): string => (Number.isFinite(v) && v >= 0 ? `+${n(v, d)}` : n(v, d));

export function pickerRoleSection(pr: PickerRoleResults): string[] {
  return [
    '## Endpoint Picker role',
    '',
    'One router process (compiled, the data path\'s topology: two local pools and an import over two clusters on the one fast EPP) serves three set-ups: ' +
      '**envoy** (its own Envoy\'s path: listen.extProc, the request matched to the HTTPRoute), ' +
      '**picker-direct** (a picker port over TLS, as by default, of a multi-cluster pool with the same backends and weights, answered directly: header and envoy.lb), ' +
      '**picker-relay** (a second picker port, its pool answered with the router\'s relay and a signed token; after the routing answer each exchange makes the relay\'s ' +
      'verifier exchange on listen.relay, as the relay\'s Envoy does, before its response phase). ' +
      `The same ~2 KiB exchange as the data path, ${pr.rounds} round(s) of ${pr.measureMs} ms per set-up after ${pr.warmupMs} ms warm-up, set-ups interleaved, ` +
      `${pr.connections} generator connection slot(s) per set-up. Proxy CPU is the router process's (/proc) per completed exchange, the verifier exchange included for picker-relay. ` +
      'Not measured here: the relay\'s own Envoy (the extra HTTP hop from the gateway through the relay pod to the model server), which adds its forwarding latency and CPU on top.',
    '',
    table(
      ['load', 'set-up', 'req/s', 'p50 ms', 'p90 ms', 'p99 ms', 'p99.9 ms', 'router CPU ms/req', 'router CPU %', 'router RSS MiB', 'EPP CPU ms/req', 'generator CPU %', 'errors'],
      cellRows(pr.cells),
    ),
    '',
    table(
      ['load', 'direct/envoy CPU per req', 'direct-envoy p50 ms', 'direct-envoy p99 ms', 'relay hop CPU ms/req', 'relay/direct CPU per req', 'relay-direct p50 ms', 'relay-direct p99 ms'],
      pr.comparisons.map((c) => [
        c.label,
        n(c.directOverEnvoyCpu),
        signed(c.directMinusEnvoy.p50),
        signed(c.directMinusEnvoy.p99),
        signed(c.relayMinusDirectCpuMs),
        n(c.relayOverDirectCpu),
        signed(c.relayMinusDirect.p50),
        signed(c.relayMinusDirect.p99),
      ]),
    ),
    '',
  ];
}
