/**
 * The relay verifier (src/relay/) on a loopback port in this process, over a two-member
 * snapshot whose members allow 10.0.0.0/8 and 127.0.0.1/32 as EPP answers: what
 * bench/relay-hop.ts measures and test/bench/relay-exchange.test.ts drives.
 */
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { MemberAnswerRules } from '../../src/config/answer-rules.js';
import { DEFAULT_EXT_PROC } from '../../src/config/defaults.js';
import { relaySchema } from '../../src/config/relay-schema.js';
import { routerConfigSchema } from '../../src/config/schema.js';
import { namedConfig } from '../../src/config/local-name.js';
import { CredentialFiles } from '../../src/credentials/credential-files.js';
import { createRelayServer } from '../../src/relay/relay-server.js';
import type { RoutingSnapshot } from '../../src/snapshot/types.js';

export const fakeSnapshot = { clusters: [{ name: 'cluster-a' }, { name: 'cluster-b' }] } as unknown as RoutingSnapshot;
export const rules = new MemberAnswerRules(
  namedConfig(routerConfigSchema.parse({
    clusterName: 'cluster-a',
    gateways: [{ namespace: 'n', name: 'g' }],
    clusters: ['cluster-a', 'cluster-b'].map((name) => ({ name, manifests: { paths: ['x'] }, eppAnswers: { destinations: { allow: ['10.0.0.0/8', '127.0.0.1/32'], deny: [] } } })),
  })),
);

/** The relay verifier on a loopback port, over the fake snapshot, its keys from `keyFile`. */
export async function startVerifier(keyFile: string): Promise<{ address: string; stop(): Promise<void> }> {
  const files = new CredentialFiles({ pollIntervalMs: 0 });
  const server = createRelayServer({
    relay: { ...relaySchema.parse({ keyFile, maxNonces: 10_000_000 }), keyFile },
    files,
    snapshot: () => fakeSnapshot,
    rules,
    registry: new Registry(),
    logger: pino({ level: 'silent' }),
    bounds: DEFAULT_EXT_PROC,
  });
  const address = await server.bind('127.0.0.1:0');
  server.setServing(true);
  return {
    address,
    async stop() {
      await server.close();
      files.close();
    },
  };
}
