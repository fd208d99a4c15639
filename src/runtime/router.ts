/**
 * Wires the router together: object sources -> snapshot store -> ext_proc
 * server, plus the admin server. Used by the CLI and by end-to-end tests, which
 * start real routers on real sockets.
 */
import { controllerEnabled, type LoadedRouterConfig } from '../config/schema.js';
import type { GatewayStatusDuty, ImportControllerHandle } from '../controller/index.js';
import type { ExportControllerHandle } from '../controller/export-controller.js';
import { kubernetesModuleFor } from '../sources/create-source.js';
import type { Logger } from '../log.js';
import { registerBuildInfo } from '../admin/build-info-metric.js';
import { buildInfo } from '../build-info.js';
import { RouterMetrics } from '../admin/metrics.js';
import { debugPlacement, startAdminServer, type AdminServer } from '../admin/server.js';
import { CredentialFiles } from '../credentials/credential-files.js';
import { securityPosture } from '../credentials/posture.js';
import { EppClientPool } from '../transport/epp-client.js';
import { FailOpenEndpoints, staticFailOpenEndpoints } from '../extproc/fail-open.js';
import { MemberAnswerRules } from '../config/answer-rules.js';
import { createExtProcServer } from '../extproc/server.js';
import { createRelayServer, type RelayServer } from '../relay/relay-server.js';
import type { RandomSource } from '../picker/types.js';
import { SignalStore } from '../signals/index.js';
import type { EppTarget } from '../snapshot/types.js';
import { startTracing } from '../telemetry/tracing.js';
import { SnapshotStore } from './snapshot-store.js';
import { routerDebugRoutes } from './debug-routes.js';
import type { FleetMembers } from './fleet-members.js';
import { StartupError, startSources } from './load-sources.js';
import { nameLocalCluster } from '../sources/identity/resolve-local.js';
import { relayAnswering, startPickerListeners, type PickerListeners } from './picker-listeners.js';

export interface RouterOptions {
  readonly logger: Logger;
  /** Injectable for deterministic tests; defaults to Math.random. */
  readonly random?: RandomSource;
  /** Collect Node process metrics (off in tests that start many routers). */
  readonly processMetrics?: boolean;
}

export interface RouterHandle {
  /** The address the ext_proc server is bound to (port 0 resolved). */
  readonly extProcAddress: string;
  /** The Endpoint Picker role's picker ports, bound (endpointPicker.ports order). */
  readonly pickerAddresses: readonly string[];
  readonly adminAddress: string;
  /** The separate /debug/* listener (listen.debug), when configured. */
  readonly debugAddress?: string;
  /** The relay verifier (listen.relay), when configured. */
  readonly relayAddress?: string;
  readonly store: SnapshotStore;
  readonly metrics: RouterMetrics;
  readonly signals: SignalStore;
  /** Graceful: stop accepting, drain in-flight streams (bounded), release everything. Idempotent. */
  shutdown(): Promise<void>;
}

export async function startRouter(loaded: LoadedRouterConfig, options: RouterOptions): Promise<RouterHandle> {
  const { logger } = options;
  // The local cluster's name, decided before anything uses it (its About API, its ClusterProfile, the config).
  const { config, identity } = await nameLocalCluster(loaded, (message) => new StartupError(message, []));
  logger.info({ cluster: identity.name }, `cluster name ${identity.name} from ${identity.from}`);
  const posture = securityPosture(config);
  for (const w of posture.warnings) logger.warn({ cluster: w.cluster, field: w.field }, w.message);
  // CA / certificate / key files of EPP TLS and scrapes, re-read when they change.
  const credentialFiles = new CredentialFiles({ pollIntervalMs: config.credentials.pollIntervalMs });
  const metrics = new RouterMetrics({ defaultMetrics: options.processMetrics ?? true });
  registerBuildInfo(metrics.registry);
  const store = new SnapshotStore(config, logger, metrics);
  // Kubernetes support (~90 MB of @kubernetes/client-node) is imported only when a member reads a Kubernetes API;
  // createObjectSource imports the same module, so instanceof below sees the same class.
  const kube = await kubernetesModuleFor(config);
  const sources = await startSources(
    config,
    { onState: (s) => store.applyState(s), onError: (e) => store.reportError(e) },
    logger,
  );
  for (const e of sources.degraded) store.reportError(e);
  const kubernetesSources = kube ? sources.sources.filter((s) => s instanceof kube.KubernetesSource) : [];
  // Each member's destination rules: for its EPPs' answers, and for the addresses its host names resolve to.
  const answerRules = new MemberAnswerRules(config);
  // Members from ClusterProfiles join clusters[] as the hub names them (fleet-members.ts); started before the first snapshot.
  let fleet: FleetMembers | undefined;
  if (config.fleet.clusterProfiles) {
    const { FleetMembers, withFleetMembers } = await import('./fleet-members.js');
    fleet = new FleetMembers(
      config,
      {
        onState: (s) => store.applyState(s),
        onError: (e) => store.reportError(e),
        // setMembers drops the states of members no longer named.
        onRemoved: () => undefined,
        onMembers: (names) => {
          const members = withFleetMembers(config, names);
          answerRules.update(members);
          store.setMembers(members);
        },
      },
      logger.child({ component: 'fleet' }),
    );
    try {
      await fleet.start();
    } catch (err) {
      await fleet.stop();
      await sources.stop();
      store.stop();
      throw new StartupError(`fleet.clusterProfiles: ${err instanceof Error ? err.message : String(err)}`, []);
    }
  }
  const first = store.release();

  // Probing and scraping run on timers, off the request path; one prober per distinct EPP/parent.
  const signals = new SignalStore({
    config,
    registry: metrics.registry,
    logger: logger.child({ component: 'signals' }),
    saturation: config.picker.saturation,
    files: credentialFiles,
  });
  // With members from ClusterProfiles the members change: probes and scrapes follow the store's clusters[].
  signals.update(first, fleet ? store.members() : undefined);
  store.onSnapshot((s) => signals.update(s, fleet ? store.members() : undefined));

  let controller: ImportControllerHandle | undefined;
  let gatewayStatus: GatewayStatusDuty | undefined;
  if (controllerEnabled(config)) {
    const local = sources.sources.find((s) => s.cluster === config.clusterName);
    const kubeConfig = kube && local instanceof kube.KubernetesSource ? local.kubeConfig : undefined;
    if (kubeConfig) {
      // Status writing is leader-elected; every replica serves traffic regardless.
      const { createGatewayStatusClient, createGatewayStatusDuty, startImportController } = await import('../controller/index.js');
      // Gateway API status (GatewayClass, Gateway, HTTPRoute parents) is written by the same leader.
      gatewayStatus = config.controller.gatewayStatus.enabled
        ? createGatewayStatusDuty({ config, client: createGatewayStatusClient(kubeConfig), logger })
        : undefined;
      controller = await startImportController({
        config,
        kubeConfig,
        logger,
        ...(gatewayStatus ? { duties: [gatewayStatus] } : {}),
        getSnapshot: () => store.snapshot(),
        getLocalState: () => store.state(config.clusterName),
        onSnapshot: (listener) => store.onSnapshot(() => listener()),
      });
      metrics.observeController(controller);
      if (gatewayStatus) metrics.observeGatewayStatus(gatewayStatus);
    } else {
      logger.warn('import controller enabled but the local cluster has no Kubernetes connection: InferencePoolImport and Gateway API status are not written');
    }
  }

  // The export controller (hub topology) keeps its own watches and Lease; it never touches the data path.
  let exporter: ExportControllerHandle | undefined;
  if (config.exportController.enabled) {
    const { startExportFromConfig } = await import('../controller/export-runtime.js');
    const fleetFor = config.fleet.clusterProfiles ? (await import('./fleet-members.js')).exportFleet : undefined;
    exporter = await startExportFromConfig(config, { logger, registry: metrics.registry, ...(fleetFor ? { fleet: fleetFor } : {}) });
  }

  const eppClients = new EppClientPool({
    maxMessageBytes: config.extProc.maxMessageBytes,
    connectTimeoutMs: config.extProc.eppConnectTimeoutMs,
    files: credentialFiles,
    transport: config.extProc.transport,
    destinations: answerRules,
  });
  const retainEpps = (): void => {
    const targets: EppTarget[] = [];
    for (const c of store.snapshot()?.candidates.values() ?? []) if (c.epp) targets.push(c.epp);
    eppClients.retain(targets);
  };
  store.onSnapshot(retainEpps);

  const tracing = await startTracing(config.tracing, logger, { version: buildInfo().version });
  const extProcDeps = {
    snapshot: () => store.snapshot(),
    settings: config.extProc,
    random: options.random ?? Math.random,
    eppClients,
    observer: metrics,
    logger,
    // The request path reads the cached view: it never pays for a full evaluation.
    signals: { view: () => signals.cached() },
    outcomes: signals,
    picker: config.picker,
    failOpen: new FailOpenEndpoints({ endpoints: staticFailOpenEndpoints(config), ttlMs: config.extProc.failOpenCacheTtlMs }),
    answerRules,
    ...(tracing ? { tracer: tracing.tracer } : {}),
  };
  const extProc = createExtProcServer(extProcDeps);
  let pickers: PickerListeners | undefined;
  let draining = false;
  let admin: AdminServer | undefined;
  let debug: AdminServer | undefined;
  let relay: RelayServer | undefined;
  let relayAddress: string | undefined;
  let extProcAddress: string;
  try {
    extProcAddress = await extProc.bind(config.listen.extProc);
    pickers = await startPickerListeners(config, extProcDeps, relayAnswering(config, credentialFiles, logger, process.env.POD_IP, first));
    extProc.setServing(true);
    pickers.setServing(true);
    const relayConfig = config.endpointPicker.relay;
    const relayKeyFile = relayConfig.keyFile;
    // listen.relay without a key file is refused by the config schema.
    if (config.listen.relay !== undefined && relayKeyFile !== undefined) {
      // The relay listener of this pod's Envoy asks here whether to forward a request (src/relay/).
      relay = createRelayServer({
        relay: { ...relayConfig, keyFile: relayKeyFile },
        files: credentialFiles,
        snapshot: () => store.snapshot(),
        rules: answerRules,
        registry: metrics.registry,
        logger: logger.child({ component: 'relay' }),
        bounds: config.extProc,
      });
      relayAddress = await relay.bind(config.listen.relay);
      relay.setServing(true);
    }
    const debugRoutes = routerDebugRoutes({
      config,
      identity,
      store,
      signals,
      kubernetesSources,
      posture,
      ...(controller ? { controller } : {}),
      ...(gatewayStatus ? { gatewayStatus } : {}),
      ...(exporter ? { exporter } : {}),
      ...(fleet ? { fleet } : {}),
    });
    const placement = debugPlacement(config.listen, config.admin.exposeDebug);
    const adminDeps = {
      registry: metrics.registry,
      logger,
      limits: config.admin,
      ready: () => {
        if (draining) return { ready: false, reason: 'draining' };
        return store.snapshot() ? { ready: true } : { ready: false, reason: 'no routing snapshot yet' };
      },
    };
    admin = await startAdminServer(config.listen.admin, {
      ...adminDeps,
      routes: placement.onAdmin ? debugRoutes : {},
      ...(placement.reason === undefined ? {} : { debugElsewhere: placement.reason }),
    });
    if (placement.listen !== undefined) debug = await startAdminServer(placement.listen, { ...adminDeps, routes: debugRoutes });
  } catch (err) {
    await admin?.close();
    await pickers?.close();
    await relay?.close();
    await extProc.close();
    credentialFiles.close();
    await controller?.stop();
    await exporter?.stop();
    signals.stop();
    eppClients.close();
    await fleet?.stop();
    await sources.stop();
    store.stop();
    await tracing?.shutdown();
    throw err;
  }
  logger.info(
    {
      extProc: extProcAddress,
      ...(pickers.addresses.length > 0 ? { endpointPicker: pickers.addresses } : {}),
      ...(relayAddress ? { relay: relayAddress } : {}),
      admin: admin.address,
      ...(debug ? { debug: debug.address } : {}),
      cluster: config.clusterName,
      mode: config.mode,
      transport: config.extProc.transport,
      ...buildInfo(),
    },
    'mcip-router serving',
  );

  let shuttingDown: Promise<void> | undefined;
  const adminServer = admin;
  const debugServer = debug;
  const pickerServers = pickers;
  const relayServer = relay;
  const shutdown = (): Promise<void> => {
    shuttingDown ??= (async () => {
      draining = true;
      extProc.setServing(false);
      pickerServers.setServing(false);
      relayServer?.setServing(false);
      const inFlight = extProc.activeStreams() + pickerServers.activeStreams();
      logger.info({ inFlight, timeoutMs: config.extProc.drainTimeoutMs }, 'draining ext_proc streams');
      await Promise.all([
        extProc.drain(config.extProc.drainTimeoutMs),
        pickerServers.drain(config.extProc.drainTimeoutMs),
        relayServer?.drain(config.extProc.drainTimeoutMs),
      ]);
      await controller?.stop();
      await exporter?.stop();
      await fleet?.stop();
      await sources.stop();
      store.stop();
      signals.stop();
      eppClients.close();
      await adminServer.close();
      await debugServer?.close();
      credentialFiles.close();
      await tracing?.shutdown();
      logger.info('mcip-router stopped');
    })();
    return shuttingDown;
  };

  return {
    extProcAddress,
    pickerAddresses: pickerServers.addresses,
    adminAddress: admin.address,
    ...(debug ? { debugAddress: debug.address } : {}),
    ...(relayAddress ? { relayAddress } : {}),
    store,
    metrics,
    signals,
    shutdown,
  };
}
