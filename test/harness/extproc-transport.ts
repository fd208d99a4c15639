/**
 * The ext_proc transport the data-path tests run the router on:
 * MCIP_TEST_EXTPROC_TRANSPORT (grpc-js or http2), else the config schema's
 * default. CI runs the data-path tests once per transport.
 */
import { extProcSchema, type RouterConfig } from '../../src/config/schema.js';

export type ExtProcTransport = RouterConfig['extProc']['transport'];

export function testExtProcTransport(): ExtProcTransport {
  const chosen = process.env.MCIP_TEST_EXTPROC_TRANSPORT;
  if (chosen === undefined || chosen === '') return extProcSchema.parse({}).transport;
  if (chosen === 'grpc-js' || chosen === 'http2') return chosen;
  throw new Error(`MCIP_TEST_EXTPROC_TRANSPORT must be grpc-js or http2, not "${chosen}"`);
}

/**
 * A router config (the object a test writes as YAML) with `extProc.transport` set to
 * testExtProcTransport(), keeping the rest of its `extProc` block.
 */
export function withTestTransport<T extends object>(config: T): T & { extProc: { transport: ExtProcTransport } } {
  const extProc = (config as { extProc?: object }).extProc ?? {};
  return { ...config, extProc: { ...extProc, transport: testExtProcTransport() } };
}
