#!/usr/bin/env node
/**
 * mcip-router CLI: `mcip-router --config FILE` serves; `--check` validates.
 * Exit codes: 0 ok, 1 crashed (or, for --check, loaded but the routing table
 * has errors), 2 bad flags, config or manifests.
 */
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseCli, USAGE } from './cli/args.js';
import { versionLine } from './build-info.js';
import { ConfigError, loadConfig } from './config/load.js';
import type { LoadedRouterConfig } from './config/schema.js';
import { createLogger } from './log.js';
import { StartupError } from './runtime/load-sources.js';

/** A bug: an error nobody handled (sysexits' EX_SOFTWARE). */
const EXIT_INTERNAL_ERROR = 70;

export async function main(argv: readonly string[]): Promise<number> {
  const cmd = parseCli(argv, process.env);
  switch (cmd.type) {
    case 'help':
      process.stdout.write(USAGE);
      return 0;
    case 'version':
      process.stdout.write(`${versionLine()}\n`);
      return 0;
    case 'usage-error':
      process.stderr.write(`mcip-router: ${cmd.message}\n\n${USAGE}`);
      return 2;
    case 'check':
    case 'run':
    case 'export-controller':
    case 'export-agent':
      break;
  }
  let config: LoadedRouterConfig;
  try {
    config = await loadConfig(cmd.configFile);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`mcip-router: invalid config: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
  const level = cmd.logLevel ?? config.log.level;
  if (cmd.type === 'check') {
    // stdout carries the table alone, so a pipeline can keep it; logs go to stderr.
    const { CHECK_LOAD_ERRORS, runCheck } = await import('./cli/check.js');
    const result = await runCheck(config, createLogger(level, process.stderr));
    (result.code === CHECK_LOAD_ERRORS ? process.stderr : process.stdout).write(result.output);
    return result.code;
  }
  if (cmd.type === 'export-agent' && !config.exportAgent) {
    process.stderr.write('mcip-router: cannot start: --export-agent needs an exportAgent block in the config (its hub and record settings)\n');
    return 2;
  }
  return serve(config, createLogger(level), cmd.type === 'run' ? undefined : cmd.type);
}

// Each role's code is loaded only when that role runs, so --help, --version, --check and a refused
// config answer without loading the data path.
async function start(config: LoadedRouterConfig, logger: ReturnType<typeof createLogger>, role: 'export-controller' | 'export-agent' | undefined): Promise<{ shutdown(): Promise<void> }> {
  if (role === undefined) return (await import('./runtime/router.js')).startRouter(config, { logger });
  const { serveExportController } = await import('./controller/export-serve.js');
  if (role === 'export-agent') return serveExportController(config, logger, true, 'agent');
  const fleet = config.fleet.clusterProfiles ? (await import('./runtime/fleet-members.js')).exportFleet : undefined;
  return serveExportController(config, logger, true, 'controller', fleet);
}

async function serve(config: LoadedRouterConfig, logger: ReturnType<typeof createLogger>, role: 'export-controller' | 'export-agent' | undefined): Promise<number> {
  process.on('unhandledRejection', (reason) => logger.error({ err: reason }, 'unhandled promise rejection'));
  // A thrown exception nobody caught is a bug: state may be inconsistent, so log it and exit for a restart.
  process.on('uncaughtException', (err) => {
    logger.fatal({ err }, 'uncaught exception: exiting');
    process.exit(1);
  });
  let router;
  try {
    router = await start(config, logger, role);
  } catch (err) {
    if (err instanceof StartupError) {
      // Without source errors the message says what stopped it (the local cluster's name, the fleet hub).
      logger.fatal({ errors: err.errors }, err.errors.length > 0 ? 'cannot start: invalid or unreadable objects' : `cannot start: ${err.message}`);
      process.stderr.write(`mcip-router: cannot start:\n${err.message}\n`);
      return 2;
    }
    logger.fatal({ err }, 'cannot start');
    process.stderr.write(`mcip-router: cannot start: ${(err as Error).message}\n`);
    return 1;
  }
  const started = router;
  return new Promise<number>((resolve) => {
    let signals = 0;
    const onSignal = (signal: NodeJS.Signals): void => {
      signals += 1;
      if (signals > 1) {
        logger.warn({ signal }, 'second signal: exiting without waiting for the drain');
        resolve(1);
        return;
      }
      logger.info({ signal }, 'shutting down');
      started.shutdown().then(
        () => resolve(0),
        (err: unknown) => {
          logger.error({ err }, 'shutdown failed');
          resolve(1);
        },
      );
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
}

function isEntryPoint(): boolean {
  const entry = process.argv[1];
  if (!entry) return false;
  try {
    return realpathSync(entry) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isEntryPoint()) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
      // Streams and timers are closed on the way out; exit explicitly so a stray handle cannot keep a stopped router alive.
      setTimeout(() => process.exit(code), 100).unref();
    },
    (err: unknown) => {
      process.stderr.write(`mcip-router: fatal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      // Not 1: for --check, 1 means "loaded, but routes have errors"; a crash must not read as that.
      process.exit(EXIT_INTERNAL_ERROR);
    },
  );
}
