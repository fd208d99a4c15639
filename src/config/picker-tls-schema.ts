/**
 * `endpointPicker.tls`: TLS on the picker ports. Certificate and key files
 * (a mounted Secret: re-read on change), or neither (a self-signed certificate
 * made at start), or `plaintext: true` (no TLS, e.g. behind mesh mTLS).
 */
import { z } from 'zod';

export const pickerTlsSchema = z
  .strictObject({
    /** PEM certificate chain served on the picker ports; set with keyFile. */
    certFile: z.string().min(1).optional(),
    /** PEM private key of certFile; set with certFile. */
    keyFile: z.string().min(1).optional(),
    /** Serve the picker ports without TLS (only when something else encrypts, e.g. a mesh). */
    plaintext: z.boolean().default(false),
  })
  .superRefine((t, ctx) => {
    if ((t.certFile === undefined) !== (t.keyFile === undefined)) {
      const missing = t.certFile === undefined ? 'certFile' : 'keyFile';
      ctx.addIssue({ code: 'custom', path: [missing], message: 'certFile and keyFile are set together (the certificate and its key)' });
    }
    if (t.plaintext && t.certFile !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['plaintext'], message: 'plaintext: true serves no TLS: remove certFile and keyFile, or plaintext' });
    }
  });

export type PickerTlsConfig = z.output<typeof pickerTlsSchema>;
