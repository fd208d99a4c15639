/**
 * The demo's own traffic: an open-loop generator sending `rps` requests per
 * second through the front door (completions and chat completions in turn),
 * like many clients would. Requests carry x-demo-load: 1 so the live view can
 * tell them from yours.
 */
import { Agent, request } from 'undici';
import { HOST } from './layout.js';
import { LOAD_HEADER } from './request-record.js';
import { raceTimeout } from './timing.js';

const PROMPTS = ['Write a haiku about routers.', 'What is an InferencePool?', 'Say hello.', 'Explain ext_proc in one sentence.'];
/** Never more than this many generated requests in flight (a stuck cluster must not pile up sockets). */
const MAX_IN_FLIGHT = 256;

export class LoadGenerator {
  private timer: NodeJS.Timeout | undefined;
  private readonly agent = new Agent({ keepAliveTimeout: 10_000, connections: 64 });
  private inFlight = 0;
  private sent = 0;
  private nextAt = 0;
  private readonly inFlightDone = new Set<Promise<void>>();

  constructor(
    private readonly port: number,
    private rpsValue: number,
  ) {}

  get rps(): number {
    return this.rpsValue;
  }

  setRps(rps: number): void {
    this.rpsValue = Math.max(0, rps);
    if (this.rpsValue > 0 && this.timer === undefined) this.start();
  }

  start(): void {
    if (this.timer !== undefined || this.rpsValue <= 0) return;
    this.nextAt = performance.now();
    const tick = (): void => {
      if (this.rpsValue <= 0) {
        this.timer = undefined;
        return;
      }
      const now = performance.now();
      const interval = 1000 / this.rpsValue;
      // Catch up after a slow tick, but never burst more than a second's worth.
      if (now - this.nextAt > 1000) this.nextAt = now - 1000;
      while (this.nextAt <= now) {
        this.nextAt += interval;
        this.fire();
      }
      this.timer = setTimeout(tick, Math.max(1, Math.min(this.nextAt - now, 50)));
    };
    tick();
  }

  private fire(): void {
    if (this.inFlight >= MAX_IN_FLIGHT) return;
    const n = this.sent++;
    const chat = n % 2 === 1;
    const prompt = PROMPTS[n % PROMPTS.length]!;
    const body = chat
      ? { model: 'llama3-8b', messages: [{ role: 'user', content: prompt }], max_tokens: 16 }
      : { model: 'llama3-8b', prompt, max_tokens: 16 };
    this.inFlight++;
    const p = request(`http://${HOST}:${this.port}${chat ? '/v1/chat/completions' : '/v1/completions'}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [LOAD_HEADER]: '1' },
      body: JSON.stringify(body),
      dispatcher: this.agent,
    })
      .then((res) => res.body.dump())
      .catch(() => undefined) // the front door records every outcome
      .finally(() => {
        this.inFlight--;
        this.inFlightDone.delete(p);
      });
    this.inFlightDone.add(p);
  }

  /** Stops sending; waits up to `graceMs` for requests in flight, then drops them. */
  async stop(graceMs: number): Promise<void> {
    this.rpsValue = 0;
    clearTimeout(this.timer);
    this.timer = undefined;
    await raceTimeout(Promise.all([...this.inFlightDone]), graceMs);
    await this.agent.destroy();
  }
}
