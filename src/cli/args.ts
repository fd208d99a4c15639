/** Command-line parsing for `mcip-router`. Pure: returns what to do, never exits. */
import { parseArgs } from 'node:util';

export const CONFIG_ENV = 'MCIP_ROUTER_CONFIG';

export const USAGE = `Usage: mcip-router --config FILE [--check | --export-controller | --export-agent] [--log-level LEVEL]

Multi-cluster InferencePool router: an Envoy ext_proc server that routes each
request to a local or remote Endpoint Picker. Two deployment shapes, both from
the same config file:
  with its own Envoy    Envoy calls listen.extProc; HTTPRoutes name
                        InferencePools and InferencePoolImports
  behind your gateway   Istio, agentgateway, NGINX Gateway Fabric, Envoy AI
                        Gateway or kgateway call it as the Endpoint Picker of a
                        multi-cluster InferencePool, on endpointPicker.ports
                        (docs/bring-your-own-gateway.md)

Options:
  -c, --config FILE     router config (YAML). Default: $${CONFIG_ENV}
      --check           load everything, print the routing table on stdout
                        (logs on stderr) and exit:
                          0  no error diagnostic
                          1  loaded, but routes or objects have errors (an
                             object left out, a share of requests that would
                             get HTTP 500, a rule refused for a feature the
                             router does not honour, a route attached to no
                             served Gateway, ...)
                          2  bad flags, invalid config, or manifests that
                             cannot be read or parsed
                          70 internal error (a bug; also in any other mode)
      --export-controller
                        run only the export controller (no ext_proc): creates
                        InferencePoolImports in every member for exported pools
      --export-agent    run only the member agent of the push/pull topology (no
                        ext_proc): publishes this cluster's exports on the hub
                        (exportAgent) and keeps its InferencePoolImports from
                        every member's record
      --log-level LEVEL override log.level (fatal|error|warn|info|debug|trace|silent)
  -h, --help            show this help
  -v, --version         print the version
`;

export type CliCommand =
  | { readonly type: 'help' }
  | { readonly type: 'version' }
  | { readonly type: 'run' | 'check' | 'export-controller' | 'export-agent'; readonly configFile: string; readonly logLevel?: string }
  | { readonly type: 'usage-error'; readonly message: string };

const LEVELS = new Set(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);

export function parseCli(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): CliCommand {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      allowPositionals: false,
      strict: true,
      options: {
        config: { type: 'string', short: 'c' },
        check: { type: 'boolean' },
        'export-controller': { type: 'boolean' },
        'export-agent': { type: 'boolean' },
        'log-level': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
      },
    }));
  } catch (err) {
    return { type: 'usage-error', message: (err as Error).message };
  }
  if (values.help) return { type: 'help' };
  if (values.version) return { type: 'version' };
  const configFile = values.config ?? env[CONFIG_ENV];
  if (!configFile) {
    return { type: 'usage-error', message: `no config file: pass --config FILE or set ${CONFIG_ENV}` };
  }
  const logLevel = values['log-level'];
  if (logLevel !== undefined && !LEVELS.has(logLevel)) {
    return { type: 'usage-error', message: `--log-level "${logLevel}" is not one of ${[...LEVELS].join(', ')}` };
  }
  const modes = (['check', 'export-controller', 'export-agent'] as const).filter((m) => values[m]);
  if (modes.length > 1) return { type: 'usage-error', message: `${modes.map((m) => `--${m}`).join(' and ')} cannot be combined` };
  const type = modes[0] ?? 'run';
  return { type, configFile, ...(logLevel ? { logLevel } : {}) };
}
