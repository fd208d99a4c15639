/**
 * `npm run demo`: multi-cluster routing on a laptop, in one command.
 *
 * Starts on 127.0.0.1 a simulated two-cluster ClusterSet (per cluster: model
 * server pods and the Endpoint Picker of InferencePool llm-pool), the real
 * mcip-router (dist/, built first if stale) reading the manifests in examples/,
 * and an HTTP front door standing in for Envoy (or, with --gateway byo, for a
 * gateway calling the router as a multi-cluster pool's Endpoint Picker). Then shows which cluster serves
 * each request, with optional load and faults (kill, EPP down, saturation).
 * Ctrl-C (or --duration) stops everything and prints a summary.
 *
 * This file is the command line: flags, the port check, the exit code. The
 * run itself is session.ts.
 */
import { parseArgs, USAGE } from './args.js';
import { HOST, lastPort, layout, takenPorts } from './layout.js';
import { DemoSession } from './session.js';

export async function main(argv: readonly string[]): Promise<number> {
  const parsed = parseArgs(argv);
  if (parsed.type === 'help') {
    process.stdout.write(USAGE);
    return 0;
  }
  if (parsed.type === 'error') {
    process.stderr.write(`demo: ${parsed.message}\n\n${USAGE}`);
    return 2;
  }
  const o = parsed.options;
  const ports = layout(o.basePort, o.pods, o.gateway);
  const taken = await takenPorts(ports);
  if (taken.length > 0) {
    const list = taken.map((t) => `  ${t.port} (${t.use})`).join('\n');
    process.stderr.write(
      `demo: ${taken.length === 1 ? 'a port the demo needs is' : 'ports the demo needs are'} already in use on ${HOST}:\n${list}\n` +
        `Stop whatever holds ${taken.length === 1 ? 'it' : 'them'} (an earlier demo?), or move the demo with --base-port N ` +
        `(it uses ports N to N+${lastPort(0)}), e.g. npm run demo -- --base-port ${o.basePort === 8080 ? 18080 : 8080}\n`,
    );
    return 2;
  }
  return new DemoSession(o, ports).run();
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`demo: fatal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
