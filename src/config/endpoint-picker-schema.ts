/**
 * The router config's `endpointPicker` block: the Endpoint Picker role, in which the
 * gateway a team already runs calls the router over ext_proc for every request to a
 * multi-cluster InferencePool (one whose spec.endpointPickerRef names this router's
 * Service). One listening port per multi-cluster pool: a stream accepted on a port is
 * for the pool whose endpointPickerRef.port.number is that port. No ports: the role is off.
 */
import { z } from 'zod';
import { objectName } from './addresses.js';
import { pickerTlsSchema } from './picker-tls-schema.js';
import { relaySchema } from './relay-schema.js';

import { PICKER_ANSWERS } from '../model/decode-picker-pool.js';

export { PICKER_ANSWERS, type PickerAnswer } from '../model/decode-picker-pool.js';

const port = z.number().int().min(1).max(65535);

export const endpointPickerSchema = z
  .strictObject({
    /** Namespace of this router's multi-cluster pools (endpointPickerRef is a local reference); required with ports. */
    namespace: objectName.optional(),
    /** The Service their endpointPickerRef names; required with ports. */
    serviceName: objectName.optional(),
    /** Host the picker ports bind on. */
    address: z.string().min(1).default('0.0.0.0'),
    /** One port per multi-cluster pool (the Service's port numbers); empty: the role is off. */
    ports: z.array(port).default([]),
    /** How a pool without the mcip-router.dev/answer annotation is answered. */
    defaultAnswer: z.enum(PICKER_ANSWERS).default('relay'),
    /** TLS on the picker ports: a certificate from files (re-read on change), else self-signed at start; plaintext only when asked. */
    tls: pickerTlsSchema.prefault({}),
    /** Relay answers: where the relay listens and the key its tokens are signed with (relay-schema.ts). */
    relay: relaySchema.prefault({}),
  })
  .superRefine((p, ctx) => {
    if (p.ports.length > 0) {
      if (p.namespace === undefined) ctx.addIssue({ code: 'custom', path: ['namespace'], message: 'required when endpointPicker.ports is set: the namespace of the multi-cluster InferencePools' });
      if (p.serviceName === undefined) ctx.addIssue({ code: 'custom', path: ['serviceName'], message: 'required when endpointPicker.ports is set: the Service the pools\' endpointPickerRef names' });
    }
    const seen = new Set<number>();
    p.ports.forEach((n, i) => {
      if (seen.has(n)) ctx.addIssue({ code: 'custom', path: ['ports', i], message: `duplicate picker port ${n}` });
      seen.add(n);
    });
  });

export type EndpointPickerConfig = z.output<typeof endpointPickerSchema>;

/**
 * The cross-field check against listen.extProc: a picker port on the same port as the
 * ext_proc listener, with hosts that can overlap (either a wildcard, or the same host),
 * cannot both bind. Returns the message, or undefined.
 */
export function pickerPortCollision(picker: { address?: unknown; ports?: unknown }, extProc: unknown): string | undefined {
  if (typeof extProc !== 'string' || extProc.startsWith('unix:') || !Array.isArray(picker.ports)) return undefined;
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d+)$/.exec(extProc);
  if (m === null) return undefined;
  const extHost = (m[1] ?? m[2])!;
  const extPort = Number(m[3]);
  if (extPort === 0 || !picker.ports.includes(extPort)) return undefined;
  const host = typeof picker.address === 'string' ? picker.address : '0.0.0.0';
  const wildcard = (h: string): boolean => h === '0.0.0.0' || h === '::' || h === '';
  if (!wildcard(host) && !wildcard(extHost) && host !== extHost) return undefined;
  return `picker port ${extPort} on ${host} collides with listen.extProc ${extProc}: move one of them (endpointPicker.ports, listen.extProc)`;
}
