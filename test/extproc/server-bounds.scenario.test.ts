// Resource bounds of the ext_proc server over real sockets: concurrent streams, the first
// message's deadline, body bytes held for an EPP per stream and for the whole process.
import { status as GrpcStatus } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { body, rawClient, rawStream, requestHeaders } from './raw-stream.js';
import { jsonBody, POOL_A_ENDPOINTS, startScenario, waitFor, type Scenario, type ScenarioOptions } from './scenario.js';

const KIB = 1024;
let sc: Scenario | undefined;
let client: ReturnType<typeof rawClient> | undefined;
afterEach(async () => {
  client?.close();
  await sc?.stop();
  sc = client = undefined;
});

async function start(o: ScenarioOptions): Promise<Scenario> {
  sc = await startScenario(o);
  client = rawClient(sc.address);
  return sc;
}

const errorOf = (b: Buffer) => (JSON.parse(b.toString()) as { error: { type: string; message: string } }).error;

describe('stream bounds', () => {
  it('past extProc.maxStreams a stream gets an immediate 503 at once, counted; below it streams are served', async () => {
    await start({ bounds: { maxStreams: 2 } });
    const held = [rawStream(client!), rawStream(client!)];
    for (const s of held) s.write(requestHeaders('local.example')); // the EPP waits for the body: both stay open
    await waitFor(() => sc!.server.activeStreams() === 2, 5000, () => `${sc!.server.activeStreams()} streams`);
    const r = await sc!.envoy.run({ authority: 'local.example', path: '/v1/completions', body: jsonBody(256) });
    expect(r.status).toBe(503);
    expect(errorOf(r.response.body)).toMatchObject({ type: 'over_capacity', message: expect.stringContaining('extProc.maxStreams (2)') });
    expect(sc!.observer.outcomes()).toContain('over_capacity');
    expect(sc!.eppA.counters.streamsOpened).toBe(2); // the shed stream never reached an EPP
    for (const s of held) s.cancel();
    await waitFor(() => sc!.server.activeStreams() === 0, 5000, () => 'streams still open');
    const ok = await sc!.envoy.run({ authority: 'local.example', path: '/v1/completions', body: jsonBody(256) });
    expect(ok.status).toBe(200);
  });

  it('a stream that sends nothing is ended after extProc.firstMessageTimeoutMs', async () => {
    await start({ bounds: { firstMessageTimeoutMs: 200 } });
    const started = Date.now();
    const s = rawStream(client!);
    await waitFor(() => sc!.server.activeStreams() === 1, 5000, () => 'stream not open');
    const st = await s.status;
    expect(st.code).toBe(GrpcStatus.DEADLINE_EXCEEDED);
    expect(st.details).toContain('extProc.firstMessageTimeoutMs (200 ms)');
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    expect(sc!.server.activeStreams()).toBe(0);
    expect(sc!.observer.outcomes()).toEqual(['protocol_error']);
  });

  it('a request holding more than extProc.maxHeldBytesPerStream unechoed gets a 503 and lets go of it', async () => {
    await start({ bounds: { maxHeldBytesPerStream: 256 * KIB } });
    const r = await sc!.envoy.run({ authority: 'local.example', path: '/v1/completions', body: [jsonBody(1024 * KIB)] });
    expect(r.status).toBe(503);
    expect(errorOf(r.response.body)).toMatchObject({ type: 'over_capacity', message: expect.stringContaining('maxHeldBytesPerStream') });
    await sc!.settled();
    expect(sc!.observer.outcomes()).toEqual(['over_capacity']);
    // Below the cap: served, body intact.
    const small = jsonBody(128 * KIB);
    const ok = await sc!.envoy.run({ authority: 'local.example', path: '/v1/completions', body: [small] });
    expect(ok.status).toBe(200);
    expect(ok.forwardedBody).toEqual(small);
  });

  it('past extProc.heldBytesBudget (all streams together) the stream asking for more gets a 503; released bytes count again', async () => {
    await start({ bounds: { maxHeldBytesPerStream: 512 * KIB, heldBytesBudget: 300 * KIB } });
    const holder = rawStream(client!);
    holder.write(requestHeaders('local.example'));
    holder.write(body('request_body', Buffer.alloc(200 * KIB, 0x61), false)); // held: the body is not complete
    await waitFor(() => sc!.eppA.counters.messages.request_body === 1, 5000, () => 'body not relayed');
    const r = await sc!.envoy.run({ authority: 'local.example', path: '/v1/completions', body: [jsonBody(150 * KIB)] });
    expect(r.status).toBe(503);
    expect(errorOf(r.response.body).message).toContain('heldBytesBudget');
    holder.cancel();
    await waitFor(() => sc!.server.activeStreams() === 0, 5000, () => 'holder still open');
    const ok = await sc!.envoy.run({ authority: 'local.example', path: '/v1/completions', body: [jsonBody(150 * KIB)] });
    expect(ok.status).toBe(200);
    expect(POOL_A_ENDPOINTS).toContain(ok.destination);
  });
});
