/**
 * Request handling of the Kubernetes API server stand-in: URL parsing
 * (/api/v1/..., /apis/{group}/{version}/..., namespaced or not, /status),
 * auth, 403/404 toggles, list with limit/continue, watch, and
 * GET/POST/PUT/PATCH/DELETE, every error rendered as a metav1.Status.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Json } from './kube-apiserver-patch.js';
import { PatchError, jsonPatch, mergePatch } from './kube-apiserver-patch.js';
import type { KubeObj, KubeStore, ResourceDef } from './kube-apiserver-store.js';
import { ApiError, RESOURCES, apiVersionOf } from './kube-apiserver-store.js';
import { labelMatcher } from './kube-apiserver-selector.js';
import { startWatch, type WatchStream } from './kube-apiserver-watch.js';

export interface RequestRecord {
  readonly method: string;
  readonly plural?: string;
  readonly namespace?: string;
  readonly name?: string;
  readonly subresource?: string;
  readonly watch: boolean;
  readonly contentType?: string;
}

/** A ResourceQuota's `count/<resource>.<group>` limits in one namespace. */
export interface ObjectCountQuota {
  readonly name: string;
  readonly namespace: string;
  readonly hard: Readonly<Record<string, number>>;
}

/** Answers a request in the stand-in's place. */
export type Responder = (req: IncomingMessage, res: ServerResponse) => void;

export interface WriteContext {
  readonly method: string;
  readonly plural: string;
  readonly namespace: string;
  readonly name: string;
  readonly subresource?: string;
}

/** What the handler needs from the server object. */
export interface ApiState {
  readonly store: KubeStore;
  readonly requests: RequestRecord[];
  readonly token: string | undefined;
  readonly goneMode: 'event' | 'http';
  /** How far behind the store watches deliver live events (lagWatches). */
  readonly watchLagMs: () => number;
  readonly uninstalled: ReadonlySet<string>;
  readonly forbidden: ReadonlySet<string>;
  /** RBAC: whether the bearer token may make this request (absent: everything allowed). */
  readonly authorize?: (token: string, r: RequestRecord) => boolean;
  /** ResourceQuotas' object counts, checked on create after authorization as quota admission does. */
  readonly quotas: readonly ObjectCountQuota[];
  runHooks(ctx: WriteContext): Promise<void>;
  /** True when this request is to be read and never answered (the connection stays open). */
  hangs(r: RequestRecord): boolean;
  hold(res: ServerResponse): void;
  /** A test's own answer for this request, if it set one (answerWith). */
  responder(r: RequestRecord): Responder | undefined;
  addWatch(w: WatchStream, res: ServerResponse): void;
}

interface Target {
  def: ResourceDef;
  namespace?: string;
  name?: string;
  subresource?: string;
}

const NOT_FOUND = 'the server could not find the requested resource';

function parse(s: ApiState, url: URL): Target {
  const parts = url.pathname.split('/').filter((p) => p !== '');
  let group: string;
  let version: string;
  let rest: string[];
  if (parts[0] === 'api' && parts.length >= 2) [group, version, rest] = ['', parts[1] ?? '', parts.slice(2)];
  else if (parts[0] === 'apis' && parts.length >= 3) [group, version, rest] = [parts[1] ?? '', parts[2] ?? '', parts.slice(3)];
  else throw new ApiError(404, 'NotFound', NOT_FOUND);
  let namespace: string | undefined;
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  const def = RESOURCES.find((r) => r.group === group && r.version === version && r.plural === rest[0]);
  if (!def || s.uninstalled.has(def.plural) || rest.length > 3) throw new ApiError(404, 'NotFound', NOT_FOUND);
  // A cluster-scoped resource has no namespaced path.
  if (!def.namespaced && namespace !== undefined) throw new ApiError(404, 'NotFound', NOT_FOUND);
  const subresource = rest[2];
  if (subresource !== undefined && !(subresource === 'status' && def.status)) throw new ApiError(404, 'NotFound', NOT_FOUND);
  return { def, namespace, name: rest[1], subresource };
}

export async function handleRequest(s: ApiState, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const watch = url.searchParams.get('watch') === 'true' || url.searchParams.get('watch') === '1';
  let t: Target | undefined;
  let record: RequestRecord | undefined;
  try {
    t = parse(s, url);
  } finally {
    record = {
      method: req.method ?? 'GET',
      plural: t?.def.plural,
      namespace: t?.namespace,
      name: t?.name,
      subresource: t?.subresource,
      watch,
      contentType: req.headers['content-type'],
    };
    s.requests.push(record);
  }
  if (s.hangs(record)) {
    req.resume();
    s.hold(res);
    return;
  }
  const respond = s.responder(record);
  if (respond) {
    respond(req, res);
    return;
  }
  if (s.token !== undefined && req.headers.authorization !== `Bearer ${s.token}`) throw new ApiError(401, 'Unauthorized', 'Unauthorized');
  const { def, namespace, name, subresource } = t;
  const bearer = (req.headers.authorization ?? '').replace(/^Bearer /, '');
  if (s.forbidden.has(def.plural) || (s.authorize !== undefined && !s.authorize(bearer, record))) {
    // RBAC verbs, as kube-apiserver names them in the message.
    const verbs: Record<string, string> = { GET: 'get', POST: 'create', PUT: 'update', PATCH: 'patch', DELETE: 'delete' };
    const verb = watch ? 'watch' : name === undefined && req.method === 'GET' ? 'list' : (verbs[req.method ?? 'GET'] ?? (req.method ?? '').toLowerCase());
    const who = s.authorize !== undefined ? `User "${bearer}"` : 'User "system:serviceaccount:mcip:router"';
    const scope = namespace !== undefined ? ` in the namespace "${namespace}"` : ' at the cluster scope';
    throw new ApiError(403, 'Forbidden', `${def.plural}.${def.group} is forbidden: ${who} cannot ${verb} resource "${def.plural}"${scope}`);
  }
  const body = req.method === 'GET' || req.method === 'DELETE' ? undefined : await readJson(req);
  if (name === undefined) {
    if (req.method === 'GET' && watch) {
      s.addWatch(startWatch(res, { def, namespace, store: s.store, query: url.searchParams, goneMode: s.goneMode, lagMs: s.watchLagMs }), res);
      return;
    }
    if (req.method === 'GET') return send(res, 200, list(s.store, def, namespace, url.searchParams));
    if (req.method === 'POST') {
      const obj = body as KubeObj;
      admitCount(s, def, namespace ?? '', String(obj?.metadata?.name ?? ''));
      await s.runHooks({ method: 'POST', plural: def.plural, namespace: namespace ?? '', name: String(obj?.metadata?.name ?? '') });
      return send(res, 201, s.store.create(def, { ...obj, metadata: { ...obj.metadata, ...(namespace ? { namespace } : {}) } }));
    }
    throw new ApiError(405, 'MethodNotAllowed', `${req.method} is not supported on a collection`);
  }
  const ns = namespace ?? '';
  const current = (): KubeObj => {
    const o = s.store.get(def.plural, ns, name);
    if (!o) throw new ApiError(404, 'NotFound', `${def.plural}.${def.group} "${name}" not found`);
    return o;
  };
  if (req.method === 'GET') return send(res, 200, current());
  await s.runHooks({ method: req.method ?? '', plural: def.plural, namespace: ns, name, subresource });
  const sub = subresource === 'status' ? 'status' : undefined;
  if (req.method === 'DELETE') return send(res, 200, s.store.delete(def, ns, name));
  if (req.method === 'PUT') {
    const obj = body as KubeObj;
    if (obj?.metadata?.name !== name) throw new ApiError(400, 'BadRequest', 'the name of the object does not match the name on the URL');
    return send(res, 200, s.store.update(def, { ...obj, metadata: { ...obj.metadata, namespace: ns } }, sub));
  }
  if (req.method === 'PATCH') {
    const obj = applyPatch(def, current(), (req.headers['content-type'] ?? '').split(';')[0]?.trim() ?? '', body) as KubeObj;
    obj.metadata = { ...obj.metadata, name, namespace: ns };
    return send(res, 200, s.store.update(def, obj, sub));
  }
  throw new ApiError(405, 'MethodNotAllowed', `${req.method} is not supported`);
}

/** Object count quota: a create past a ResourceQuota's hard count is refused as kube-apiserver refuses it. */
function admitCount(s: ApiState, def: ResourceDef, namespace: string, name: string): void {
  const key = `count/${def.plural}${def.group ? `.${def.group}` : ''}`;
  for (const q of s.quotas) {
    const limit = q.hard[key];
    if (q.namespace !== namespace || limit === undefined) continue;
    const used = s.store.list(def.plural, namespace).length;
    if (used + 1 > limit) {
      throw new ApiError(403, 'Forbidden', `${def.plural}${def.group ? `.${def.group}` : ''} "${name}" is forbidden: exceeded quota: ${q.name}, requested: ${key}=1, used: ${key}=${used}, limited: ${key}=${limit}`);
    }
  }
}

function applyPatch(def: ResourceDef, before: KubeObj, type: string, body: unknown): Json {
  try {
    if (type === 'application/merge-patch+json') return mergePatch(before, body as Json);
    if (type === 'application/json-patch+json') return jsonPatch(before, body);
    // Strategic merge patch exists for built-in types only; treated as a merge patch here.
    if (type === 'application/strategic-merge-patch+json' && def.group === '') return mergePatch(before, body as Json);
  } catch (err) {
    if (err instanceof PatchError) throw new ApiError(err.code, err.code === 422 ? 'Invalid' : 'BadRequest', err.message);
    throw err;
  }
  throw new ApiError(
    415,
    'UnsupportedMediaType',
    'the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json',
  );
}

function list(store: KubeStore, def: ResourceDef, namespace: string | undefined, q: URLSearchParams): object {
  const rv = store.resourceVersion;
  const matches = labelMatcher(q.get('labelSelector'));
  let items = store.list(def.plural, namespace).filter((o) => matches(o.metadata.labels as Record<string, unknown> | undefined));
  let start = 0;
  const token = q.get('continue');
  if (token) {
    const parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as { rv: number; start: number };
    if (parsed.rv < store.compacted) {
      throw new ApiError(410, 'Expired', 'The provided continue parameter is too old to display a consistent list result.');
    }
    start = parsed.start;
  }
  const limit = Number(q.get('limit') ?? 0);
  const end = limit > 0 ? start + limit : items.length;
  const more = end < items.length;
  items = items.slice(start, end);
  // Like the real server, core lists carry no per-item kind/apiVersion.
  if (def.group === '') items = items.map(({ kind: _k, apiVersion: _a, ...rest }) => rest as KubeObj);
  else items = items.map((o) => ({ ...o, apiVersion: apiVersionOf(def) }));
  const cont = more ? { continue: Buffer.from(JSON.stringify({ rv, start: end })).toString('base64url') } : {};
  return { kind: `${def.kind}List`, apiVersion: apiVersionOf(def), metadata: { resourceVersion: String(rv), ...cont }, items };
}

export function sendError(res: ServerResponse, err: unknown): void {
  const e = err instanceof ApiError ? err : new ApiError(500, 'InternalError', err instanceof Error ? err.message : String(err));
  if (res.headersSent) {
    res.destroy();
    return;
  }
  send(res, e.code, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: e.message, reason: e.reason, code: e.code });
}

function send(res: ServerResponse, code: number, body: object): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError(400, 'BadRequest', 'the request body is not valid JSON');
  }
}
