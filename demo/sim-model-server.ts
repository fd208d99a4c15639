/**
 * SIMULATION: one model server pod (what vLLM is in a real cluster). An
 * OpenAI-style HTTP API on loopback that answers after a small artificial
 * latency and says which cluster and pod served the request. It keeps the
 * load numbers the simulated EPP picks by and reports as pool metrics.
 *
 * Load model: `capacity` requests run at once; the rest wait. Response time
 * grows with load (base latency x load / capacity once over capacity), and
 * "saturation" adds background requests from other, imaginary clients.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { HOST, listen } from './layout.js';
import { CLUSTER_HEADER, POD_HEADER } from './request-record.js';
import { sleep } from './timing.js';

export interface ModelServerOptions {
  readonly cluster: string;
  readonly pod: string;
  readonly port: number;
  readonly baseLatencyMs: number;
  /** Requests that run at once (vLLM's batch); more wait in the queue. */
  readonly capacity: number;
}

const MODELS = ['llama3-8b'];
const MAX_BODY = 4 * 1024 * 1024;
/** A pick reserves load on a pod until the request arrives (or this long), so bursts spread out. */
const RESERVATION_MS = 2000;

export class SimulatedModelServer {
  readonly cluster: string;
  readonly pod: string;
  readonly port: number;
  /** Requests in progress on this pod (running or waiting). */
  inFlight = 0;
  /** Background requests from other clients (saturation). */
  background = 0;
  served = 0;
  private server: Server | undefined;
  private readonly reservations: number[] = [];

  constructor(private readonly opts: ModelServerOptions) {
    this.cluster = opts.cluster;
    this.pod = opts.pod;
    this.port = opts.port;
  }

  get endpoint(): string {
    return `${HOST}:${this.port}`;
  }

  get up(): boolean {
    return this.server !== undefined;
  }

  get capacity(): number {
    return this.opts.capacity;
  }

  /** Load the EPP picks by: in flight + background + picked but not yet arrived. */
  load(now = Date.now()): number {
    while (this.reservations.length > 0 && this.reservations[0]! <= now) this.reservations.shift();
    return this.inFlight + this.background + this.reservations.length;
  }

  /** The EPP picked this pod: count the request before it arrives. */
  reserve(): void {
    this.reservations.push(Date.now() + RESERVATION_MS);
  }

  runningRequests(): number {
    return Math.min(this.capacity, this.inFlight + this.background);
  }

  waitingRequests(): number {
    return Math.max(0, this.inFlight + this.background - this.capacity);
  }

  /** KV-cache use in 0-1: running requests fill the cache. */
  kvCacheUtilization(): number {
    return Math.min(1, (this.inFlight + this.background) / this.capacity);
  }

  async start(): Promise<void> {
    if (this.server) return;
    const server = createServer((req, res) => void this.handle(req, res));
    server.keepAliveTimeout = 5000;
    await listen(server, this.port);
    this.server = server;
  }

  /** Stops at once, like a killed pod: open connections are cut. */
  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    this.reservations.length = 0;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await closed;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.reservations.shift();
    const url = new URL(req.url ?? '/', 'http://pod');
    res.setHeader(CLUSTER_HEADER, this.cluster);
    res.setHeader(POD_HEADER, this.pod);
    if (req.method === 'GET' && url.pathname === '/health') return void res.end();
    if (req.method === 'GET' && url.pathname === '/v1/models') {
      return json(res, 200, { object: 'list', data: MODELS.map((id) => ({ id, object: 'model', owned_by: 'mcip-demo' })) });
    }
    const kind = url.pathname === '/v1/completions' ? 'completion' : url.pathname === '/v1/chat/completions' ? 'chat' : undefined;
    if (kind === undefined || req.method !== 'POST') {
      return json(res, 404, openAiError(`no route for ${req.method} ${url.pathname} (try POST /v1/completions or /v1/chat/completions)`));
    }
    let body: Record<string, unknown>;
    try {
      const parsed: unknown = JSON.parse((await readBody(req)).toString('utf8'));
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
      body = parsed as Record<string, unknown>;
    } catch {
      return json(res, 400, openAiError('the request body is not a JSON object'));
    }
    this.inFlight++;
    try {
      await this.respond(kind, body, res);
      this.served++;
    } finally {
      this.inFlight--;
    }
  }

  private async respond(kind: 'completion' | 'chat', body: Record<string, unknown>, res: ServerResponse): Promise<void> {
    const model = typeof body.model === 'string' ? body.model : MODELS[0]!;
    const load = this.inFlight + this.background;
    const latency = this.opts.baseLatencyMs * (0.75 + Math.random() / 2) * Math.max(1, load / this.capacity);
    const text = `Hello from ${this.cluster}, pod ${this.pod}.`;
    const promptTokens = countTokens(kind === 'chat' ? JSON.stringify(body.messages ?? '') : String(body.prompt ?? ''));
    const completionTokens = countTokens(text);
    const id = `${kind === 'chat' ? 'chatcmpl' : 'cmpl'}-${randomBytes(6).toString('hex')}`;
    const created = Math.floor(Date.now() / 1000);
    const servedBy = { cluster: this.cluster, pod: this.pod, endpoint: this.endpoint };

    if (body.stream === true) {
      // Server-sent events, one word per chunk, like an OpenAI-compatible server streaming tokens.
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      const words = text.split(' ');
      for (let i = 0; i < words.length; i++) {
        await sleep(latency / words.length);
        if (res.destroyed) return;
        const piece = (i === 0 ? '' : ' ') + words[i];
        const last = i === words.length - 1;
        const choice =
          kind === 'chat'
            ? { index: 0, delta: i === 0 ? { role: 'assistant', content: piece } : { content: piece }, finish_reason: last ? 'stop' : null }
            : { index: 0, text: piece, finish_reason: last ? 'stop' : null };
        const chunk = { id, object: kind === 'chat' ? 'chat.completion.chunk' : 'text_completion', created, model, choices: [choice], served_by: servedBy };
        res.write(`data: ${JSON.stringify(chunk)}\n\n`);
      }
      res.end('data: [DONE]\n\n');
      return;
    }

    await sleep(latency);
    if (res.destroyed) return;
    const usage = { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens };
    const choice =
      kind === 'chat'
        ? { index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }
        : { index: 0, text, logprobs: null, finish_reason: 'stop' };
    json(res, 200, {
      id,
      object: kind === 'chat' ? 'chat.completion' : 'text_completion',
      created,
      model,
      choices: [choice],
      usage,
      served_by: servedBy,
    });
  }
}

function json(res: ServerResponse, status: number, value: unknown): void {
  const body = `${JSON.stringify(value)}\n`;
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

function openAiError(message: string): { error: { message: string; type: string } } {
  return { error: { message, type: 'invalid_request_error' } };
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) req.destroy(new Error('request body too large'));
      else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function countTokens(s: string): number {
  return Math.max(1, Math.ceil(s.length / 4));
}
