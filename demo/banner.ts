/**
 * What the demo prints once everything is up: where each part listens, the
 * routing table the router really built (from its admin /debug/routes), curl
 * commands to try, the keys, and the plan (load, faults, duration).
 */
import { join, relative } from 'node:path';
import { request } from 'undici';
import type { DemoOptions } from './args.js';
import { describeFault } from './faults.js';
import { KEYS_HELP } from './keys.js';
import { HOST, type ClusterName, type Layout } from './layout.js';
import { PICKER_SERVICE, pickerPort } from './gateway-shape.js';
import { ROOT, type RouterFiles } from './router-process.js';
import { POOL } from './sim-cluster.js';
import { bold, dim } from './view.js';

interface Backend { ref: { kind: string; name: string }; weight: number; candidates: string[] }
interface Routes {
  routes?: { route: { namespace: string; name: string }; rules: { index: number; backends: Backend[] }[] }[];
  pickerPools?: { route: string; port: number; answer: string; backends: Backend[] }[];
}

function backendsLine(backends: readonly Backend[]): string {
  return backends
    .map((b) => `weight ${b.weight} ${b.ref.kind} ${b.ref.name} (${b.candidates.map((c) => c.split('/')[0]).join(', ') || 'no usable pool'})`)
    .join(', ');
}

/**
 * The router's routing table in one line per HTTPRoute rule and per multi-cluster pool,
 * from its admin /debug/routes; none if it does not answer.
 */
export async function routeSummary(routerAdmin: string): Promise<string[]> {
  try {
    const res = await request(`http://${routerAdmin}/debug/routes`, { headersTimeout: 2000, bodyTimeout: 2000 });
    const body = (await res.body.json()) as Routes;
    const lines: string[] = [];
    for (const r of body.routes ?? []) {
      for (const rule of r.rules) lines.push(`${r.route.namespace}/${r.route.name} rule ${rule.index}: ${backendsLine(rule.backends)}`);
    }
    for (const p of body.pickerPools ?? []) lines.push(`${p.route} on picker port ${p.port}, answer ${p.answer}: ${backendsLine(p.backends)}`);
    return lines;
  } catch {
    return [];
  }
}

export interface BannerFacts {
  readonly options: DemoOptions;
  readonly ports: Layout;
  readonly files: RouterFiles;
  readonly routerPid: number | undefined;
  /** From routeSummary. */
  readonly routeLines: readonly string[];
}

const label = (text: string): string => bold(text.padEnd(13));
const rel = (f: string): string => relative(ROOT, f) || f;

/** The router and the front door in the default shape: the router beside its own Envoy, matching the HTTPRoute. */
function envoyShape(p: Layout, files: RouterFiles, routerPid: number | undefined, routeLines: readonly string[]): string[] {
  return [
    ...routeLines.map((r, i) => `  ${label(i === 0 ? 'HTTPRoute' : '')}${r}`),
    `  ${label('')}manifests: ${rel(join(ROOT, 'examples/cluster-a'))}/, ${rel(join(ROOT, 'examples/cluster-b'))}/`,
    `  ${label('mcip-router')}the real one (pid ${routerPid}): ext_proc ${HOST}:${p.routerExtProc}, admin http://${HOST}:${p.routerAdmin}`,
    `  ${label('')}config: ${files.configFile} (examples/router.yaml with the demo's ports)`,
    `  ${label('front door')}http://${HOST}:${p.frontDoor}`,
    `  ${label('')}${bold('A stand-in for Envoy.')} In production, Envoy runs with envoy/envoy.yaml and`,
    `  ${label('')}calls the router over ext_proc the same way this front door does (FULL_DUPLEX_STREAMED).`,
  ];
}

/** The byo shape: the gateway you run calls the router as the Endpoint Picker of a multi-cluster pool. */
function byoShape(p: Layout, files: RouterFiles, routerPid: number | undefined, routeLines: readonly string[]): string[] {
  const port = pickerPort(p);
  return [
    ...routeLines.map((r, i) => `  ${label(i === 0 ? 'pool' : '')}${r}`),
    `  ${label('')}manifest: ${files.multiClusterPool} (an ordinary InferencePool whose`,
    `  ${label('')}endpointPickerRef names Service ${PICKER_SERVICE}, port ${port}), beside ${rel(join(ROOT, 'examples/cluster-a/inferencepool.yaml'))}`,
    `  ${label('mcip-router')}the real one (pid ${routerPid}), the pool's ${bold('Endpoint Picker')}: picker port ${HOST}:${port}`,
    `  ${label('')}(ext_proc over TLS, self-signed certificate), admin http://${HOST}:${p.routerAdmin}`,
    `  ${label('')}config: ${files.configFile} (examples/router.yaml with an endpointPicker block, no HTTPRoute)`,
    `  ${label('front door')}http://${HOST}:${p.frontDoor}`,
    `  ${label('')}${bold('A stand-in for the gateway you already run.')} It calls the router the way Envoy AI Gateway`,
    `  ${label('')}calls a pool's Endpoint Picker: one ext_proc stream per request to port ${port}, TLS without`,
    `  ${label('')}verifying, FULL_DUPLEX_STREAMED, then ORIGINAL_DST on x-gateway-destination-endpoint.`,
    `  ${label('')}NGINX Gateway Fabric takes the same direct answers (in one exchange per request);`,
    `  ${label('')}Istio, agentgateway and kgateway need relay answers. Per gateway: docs/bring-your-own-gateway.md`,
    '',
    `  ${label('flow')}gateway ──ext_proc/TLS──▶ mcip-router (Endpoint Picker) ──▶ EPP of cluster-a or cluster-b`,
    `  ${label('')}   └──────── HTTP to the model server in x-gateway-destination-endpoint ◀────────┘`,
  ];
}

export function printBanner({ options: o, ports: p, files, routerPid, routeLines }: BannerFacts): void {
  const url = `http://${HOST}:${p.frontDoor}`;
  const admin = `http://${HOST}:${p.routerAdmin}`;
  const podRange = (name: ClusterName): string => {
    const pods = p.clusters[name].pods;
    return pods.length === 1 ? `${pods[0]}` : `${pods[0]}-${pods[pods.length - 1]}`;
  };
  const json = `-H 'content-type: application/json'`;
  const lines = [
    '',
    `  ${label('cluster-a')}imports ${POOL} from cluster-b; this router's cluster`,
    `  ${label('')}EPP ${HOST}:${p.clusters['cluster-a'].epp} (metrics :${p.clusters['cluster-a'].metrics}), ${o.pods} model servers on :${podRange('cluster-a')}`,
    `  ${label('cluster-b')}exports ${POOL} (annotation inference.networking.x-k8s.io/export: ClusterSet)`,
    `  ${label('')}EPP ${HOST}:${p.clusters['cluster-b'].epp} (metrics :${p.clusters['cluster-b'].metrics}), ${o.pods} model servers on :${podRange('cluster-b')}`,
    ...(o.gateway === 'byo' ? byoShape : envoyShape)(p, files, routerPid, routeLines),
    '',
    bold('Try:'),
    `  curl -s ${url}/v1/completions ${json} -d '{"model":"llama3-8b","prompt":"Hello"}'`,
    `  curl -s ${url}/v1/chat/completions ${json} -d '{"model":"llama3-8b","messages":[{"role":"user","content":"Hi"}]}'`,
    `  curl -sN ${url}/v1/completions ${json} -d '{"model":"llama3-8b","prompt":"Hi","stream":true}'`,
    `  curl -s ${admin}/debug/routes     ${dim('# the routing table the router built from the manifests')}`,
    `  curl -s ${admin}/debug/signals    ${dim('# health and load the router knows of each pool')}`,
    `  curl -s http://${HOST}:${p.clusters['cluster-b'].metrics}/metrics   ${dim("# cluster-b's pool metrics, as its EPP exports them")}`,
    '',
  ];
  if (process.stdin.isTTY) lines.push(`${bold('Keys:')} ${KEYS_HELP}`);
  const plan: string[] = [];
  if (o.load > 0) plan.push(`sending ${o.load} req/s`);
  for (const f of o.faults) plan.push(`${describeFault(f)} at ${o.afterS}s${o.forS !== undefined ? ` for ${o.forS}s` : ''}`);
  if (o.durationS !== undefined) plan.push(`stopping after ${o.durationS}s`);
  lines.push(`${bold('Ready.')} ${plan.length > 0 ? `${plan.join(', ')}. ` : ''}Ctrl-C stops everything.`, '');
  process.stdout.write(`${lines.join('\n')}\n`);
}
