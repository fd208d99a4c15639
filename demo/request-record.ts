/**
 * What the front door reports of each request it handled, for the live view:
 * who served it (cluster and pod of the model server), or who answered instead
 * and why.
 */

/** What the front door saw of one request. */
export interface RequestRecord {
  readonly method: string;
  readonly path: string;
  readonly status: number;
  /** From the model server's answer; absent when no model server answered. */
  readonly cluster?: string;
  readonly pod?: string;
  /** The x-gateway-destination-endpoint the router/EPP chose. */
  readonly destination?: string;
  readonly ms: number;
  /** Sent by the demo's own load generator (header x-demo-load). */
  readonly generated: boolean;
  /** Who answered when it was not a model server, e.g. "router: mcip_router_epp_unavailable". */
  readonly detail?: string;
}

/** Header the load generator marks its requests with. */
export const LOAD_HEADER = 'x-demo-load';

/** Headers a simulated model server names itself with. */
export const CLUSTER_HEADER = 'x-demo-cluster';
export const POD_HEADER = 'x-demo-pod';

/** Who answered with an immediate_response instead of a model server, and why: "router: …" or "EPP: …". */
export function immediateResponseDetail(details: string, body: Buffer): string {
  const who = details.startsWith('mcip_router') ? 'router' : details.startsWith('demo_epp') ? 'EPP' : 'router or EPP';
  let why = body.toString('utf8').trim();
  try {
    const parsed = JSON.parse(why) as { error?: { message?: unknown } | string; message?: unknown };
    const m = typeof parsed.error === 'object' ? parsed.error?.message : (parsed.error ?? parsed.message);
    if (typeof m === 'string') why = m;
  } catch {
    // not JSON: the text itself
  }
  why = why.length > 120 ? `${why.slice(0, 117)}...` : why;
  return `${who}: ${why || details || 'immediate response'}`;
}
