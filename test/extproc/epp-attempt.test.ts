import { DEFAULT_EXT_PROC } from '../../src/config/defaults.js';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { classify, describeFailure, EppAttempt, type AttemptOwner, type EppCandidate } from '../../src/extproc/epp-attempt.js';
import { ErrorCode, RouterError } from '../../src/extproc/errors.js';
import type { FailureReason } from '../../src/signals/types.js';
import { FakeEnvoy, FakeEppCall, FakePool } from './fakes.js';
import { RecordingObserver } from './scenario.js';

const candidate: EppCandidate = {
  id: 'cluster-a/ns/p',
  cluster: 'cluster-a',
  namespace: 'ns',
  pool: 'p',
  local: true,
  failureMode: 'FailClose',
  targetPorts: [8000],
  via: 'epp',
  epp: { address: '127.0.0.1:1', host: '127.0.0.1', port: 1, cluster: 'cluster-a', service: { namespace: 'ns', name: 'e' }, source: 'override', tls: { enabled: false, insecureSkipVerify: true } },
};

class Owner implements AttemptOwner {
  readonly events: string[] = [];
  readonly errors: string[] = [];
  onEppMessage(_a: EppAttempt, msg: Buffer): boolean {
    this.events.push(`msg ${msg.toString()}`);
    return msg.toString() !== 'nothing';
  }
  onEppEnd(): void {
    this.events.push('end');
  }
  onEppFailure(_a: EppAttempt, reason: FailureReason, err: unknown): void {
    this.events.push(`fail ${reason}`);
    this.errors.push(describeFailure(err));
  }
}

function setup(timeoutMs = 0, releaseGraceMs?: number) {
  const envoy = new FakeEnvoy();
  const pool = new FakePool();
  const owner = new Owner();
  const observer = new RecordingObserver();
  const replayed = [Buffer.from('h'), Buffer.from('b')];
  const settings = { pool: pool.asPool(), observer, attemptTimeoutMs: timeoutMs, releaseGraceMs: releaseGraceMs ?? DEFAULT_EXT_PROC.releaseGraceMs };
  const attempt = new EppAttempt(envoy, envoy.writer.waits, candidate, settings, owner, replayed);
  /** Envoy half-closes, as the relay hands it on: booked in the stream's ledger, then the attempt is told. */
  const halfClose = (): void => {
    envoy.writer.inputEnded();
    attempt.endInput();
  };
  return { envoy, pool, owner, observer, attempt, halfClose, call: new FakeEppCall() };
}

describe('EppAttempt', () => {
  it('replays first, then forwards; first message and stream lifetime are observed once', async () => {
    const { envoy, pool, owner, observer, attempt, call } = setup();
    attempt.forward(Buffer.from('live'));
    expect(envoy.paused).toBe(true);
    await pool.complete(call);
    expect(call.written.map(String)).toEqual(['h', 'b', 'live']);
    expect(envoy.paused).toBe(false);
    call.reply(Buffer.from('r1'));
    call.reply(Buffer.from('r2'));
    call.status(GrpcStatus.OK);
    expect(owner.events).toEqual(['msg r1', 'msg r2', 'end']);
    expect(observer.firstResponses).toEqual(['cluster-a']);
    expect(observer.eppStreams).toEqual(['cluster-a']);
  });

  it('a connect failure is reported once as connect; Envoy is resumed', async () => {
    const { envoy, pool, owner, observer } = setup();
    await pool.reject(new RouterError(ErrorCode.EppUnavailable, 'no connection'));
    expect(owner.events).toEqual(['fail connect']);
    expect(envoy.paused).toBe(false);
    expect(observer.eppStreams).toHaveLength(1);
  });

  it('the timer runs from arm() to the first message', async () => {
    const { pool, owner, attempt, call } = setup(20);
    await pool.complete(call);
    attempt.arm();
    await new Promise((r) => setTimeout(r, 50));
    expect(owner.events).toEqual(['fail timeout']);
    expect(call.cancelled).toBe(true);
  });

  it('a message that answers nothing (override_message_timeout) leaves the deadline running', async () => {
    const { pool, owner, attempt, call, observer } = setup(20);
    await pool.complete(call);
    attempt.arm();
    call.reply(Buffer.from('nothing'));
    await new Promise((r) => setTimeout(r, 50));
    expect(owner.events).toEqual(['msg nothing', 'fail timeout']);
    expect(observer.firstResponses).toEqual([]);
  });

  it('an answer before the deadline disarms it', async () => {
    const { pool, owner, attempt, call } = setup(20);
    await pool.complete(call);
    attempt.arm();
    call.reply(Buffer.from('h'));
    await new Promise((r) => setTimeout(r, 50));
    expect(owner.events).toEqual(['msg h']);
  });

  it('before its answer, an EPP that reads nothing for the timeout fails, armed or not; each drain restarts the clock', async () => {
    const { envoy, pool, owner, attempt, call } = setup(40);
    await pool.complete(call);
    call.writeResult = false;
    attempt.forward(Buffer.from('b1'));
    expect(envoy.paused).toBe(true);
    await new Promise((r) => setTimeout(r, 25));
    call.emit('drain'); // progress
    attempt.forward(Buffer.from('b2'));
    await new Promise((r) => setTimeout(r, 25));
    expect(owner.events).toEqual([]); // 50 ms stalled in total, never 40 in a row
    await new Promise((r) => setTimeout(r, 40));
    expect(owner.events).toEqual(['fail timeout']);
    expect(call.cancelled).toBe(true);
    expect(envoy.paused).toBe(false);
  });

  it('after its answer, a slow-reading EPP is not timed out (the stream is committed to it)', async () => {
    const { pool, owner, attempt, call } = setup(20);
    await pool.complete(call);
    call.reply(Buffer.from('h'));
    call.writeResult = false;
    attempt.forward(Buffer.from('b1'));
    await new Promise((r) => setTimeout(r, 50));
    expect(owner.events).toEqual(['msg h']);
  });

  it('dispose cancels silently', async () => {
    const { pool, owner, attempt, call } = setup();
    await pool.complete(call);
    attempt.dispose();
    expect(call.cancelled).toBe(true);
    expect(owner.events).toEqual([]);
  });

  describe('release (Envoy reset a stream it had half-closed)', () => {
    it('a half-closed call is read to its end by the EPP, not cancelled; nothing more reaches the owner', async () => {
      const { pool, owner, observer, attempt, halfClose, call } = setup(0, 30);
      await pool.complete(call);
      halfClose();
      attempt.pauseEpp();
      expect(call.paused).toBe(true);
      attempt.release();
      expect(call.paused).toBe(false); // reading on, so the EPP's end arrives
      expect(call.cancelled).toBe(false);
      expect(observer.eppStreams).toEqual(['cluster-a']);
      call.reply(Buffer.from('late'));
      call.status(GrpcStatus.OK);
      await new Promise((r) => setTimeout(r, 60)); // past the grace period: its timer was cleared
      expect(call.cancelled).toBe(false);
      expect(owner.events).toEqual([]);
    });

    it('a call the EPP does not end within the grace period is cancelled then', async () => {
      const { pool, owner, attempt, halfClose, call } = setup(0, 30);
      await pool.complete(call);
      halfClose();
      attempt.release();
      await new Promise((r) => setTimeout(r, 10));
      expect(call.cancelled).toBe(false);
      await new Promise((r) => setTimeout(r, 50));
      expect(call.cancelled).toBe(true);
      expect(owner.events).toEqual([]);
    });

    it('an EPP failing the released call just ends it (no report, no cancel)', async () => {
      const { pool, owner, attempt, halfClose, call } = setup(0, 30);
      await pool.complete(call);
      halfClose();
      attempt.release();
      call.status(GrpcStatus.UNAVAILABLE, 'gone');
      await new Promise((r) => setTimeout(r, 60));
      expect(call.cancelled).toBe(false);
      expect(owner.events).toEqual([]);
    });

    it('a call not half-closed is cancelled at once, like dispose(); before it opens, none starts', async () => {
      {
        const { pool, attempt, call } = setup(0, 30);
        await pool.complete(call);
        attempt.release();
        expect(call.cancelled).toBe(true);
      }
      {
        const { pool, attempt, halfClose, call } = setup(0, 30);
        halfClose();
        attempt.release();
        await pool.complete(call);
        expect(pool.opened).toHaveLength(0);
      }
    });
  });

  it('a call that fails while the replay is written is reported once and not half-closed', async () => {
    const { envoy, pool, owner, attempt, halfClose, call } = setup();
    call.write = (b: Buffer): boolean => {
      call.written.push(b);
      call.status(GrpcStatus.UNAVAILABLE, 'gone');
      return true;
    };
    halfClose();
    await pool.complete(call);
    expect(owner.events).toEqual(['fail stream']);
    expect(call.ended).toBe(false);
    expect(envoy.paused).toBe(false);
  });

  describe('phases (fake clock)', () => {
    beforeEach(() => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    });
    afterEach(() => {
      vi.useRealTimers();
    });

    it('the answer deadline and the read deadline say which they are and name the setting', async () => {
      const answer = setup(20);
      await answer.pool.complete(answer.call);
      answer.attempt.arm();
      vi.advanceTimersByTime(25);
      expect(answer.owner.errors).toEqual(['the EPP sent no answer within attemptTimeoutMs (20 ms)']);
      const read = setup(20);
      await read.pool.complete(read.call);
      read.call.writeResult = false;
      read.attempt.forward(Buffer.from('b1'));
      vi.advanceTimersByTime(25);
      expect(read.owner.errors).toEqual(['the EPP stopped reading the request before it answered: nothing read within attemptTimeoutMs (20 ms)']);
    });

    it('an answer while the call is backed up stops the read deadline; Envoy stays held until the call drains', async () => {
      const { envoy, pool, owner, attempt, call } = setup(20);
      await pool.complete(call);
      call.writeResult = false;
      attempt.forward(Buffer.from('b1'));
      call.reply(Buffer.from('h'));
      vi.advanceTimersByTime(100);
      expect(owner.events).toEqual(['msg h']);
      expect(envoy.paused).toBe(true);
      call.emit('drain');
      expect(envoy.paused).toBe(false);
    });

    it('an answer deadline armed while connecting counts the connect time, and a second arm() does not restart it', async () => {
      const { pool, owner, attempt, call } = setup(20);
      attempt.arm();
      vi.advanceTimersByTime(15);
      await pool.complete(call);
      attempt.arm();
      vi.advanceTimersByTime(10);
      expect(owner.events).toEqual(['fail timeout']);
      expect(call.cancelled).toBe(true);
    });

    it('an answer disarms a deadline armed while connecting', async () => {
      const { pool, owner, attempt, call } = setup(20);
      attempt.arm();
      await pool.complete(call);
      call.reply(Buffer.from('h'));
      vi.advanceTimersByTime(100);
      expect(owner.events).toEqual(['msg h']);
    });

    it('dispose while connecting: Envoy resumed, its answer deadline stopped, no call started, nothing reported, the EPP stream observed once', async () => {
      const { envoy, pool, owner, observer, attempt, call } = setup(20);
      attempt.arm();
      expect(envoy.paused).toBe(true);
      expect(vi.getTimerCount()).toBe(1);
      attempt.dispose();
      expect(envoy.paused).toBe(false);
      expect(vi.getTimerCount()).toBe(0);
      await pool.complete(call);
      vi.advanceTimersByTime(100);
      expect(pool.opened).toHaveLength(0);
      expect(owner.events).toEqual([]);
      expect(observer.eppStreams).toEqual(['cluster-a']);
      const refused = setup();
      refused.attempt.dispose();
      await refused.pool.reject(new RouterError(ErrorCode.EppUnavailable, 'no connection'));
      expect(refused.owner.events).toEqual([]);
    });

    it('a call backed up by the replay keeps Envoy held once open, until it drains', async () => {
      const { envoy, pool, attempt, call } = setup();
      call.writeResult = false;
      await pool.complete(call);
      expect(call.written.map(String)).toEqual(['h', 'b']);
      expect(envoy.paused).toBe(true);
      attempt.forward(Buffer.from('live'));
      call.emit('drain');
      expect(envoy.paused).toBe(false);
      expect(call.written.map(String)).toEqual(['h', 'b', 'live']);
    });

    it('ending an answered attempt whose call is backed up resumes the Envoy side it held', async () => {
      const { envoy, pool, attempt, call } = setup();
      await pool.complete(call);
      call.reply(Buffer.from('h'));
      call.writeResult = false;
      attempt.forward(Buffer.from('b1'));
      expect(envoy.paused).toBe(true);
      attempt.dispose();
      expect(envoy.paused).toBe(false);
      expect(call.cancelled).toBe(true);
      call.emit('drain'); // a late drain changes nothing
      expect(envoy.paused).toBe(false);
    });
  });

  it('classify: refused / unreachable before any answer is connect, anything else stream', () => {
    const err = (code: number, details: string) => ({ code, details });
    expect(classify(err(GrpcStatus.UNAVAILABLE, 'No connection established. Last error: connect ECONNREFUSED 127.0.0.1:1'), false)).toBe('connect');
    expect(classify(err(GrpcStatus.UNAVAILABLE, 'Connection dropped'), false)).toBe('stream');
    expect(classify(err(GrpcStatus.UNAVAILABLE, 'No connection established'), true)).toBe('stream');
    expect(classify(err(GrpcStatus.INTERNAL, 'x'), false)).toBe('stream');
    expect(describeFailure(err(GrpcStatus.UNAVAILABLE, 'gone'))).toBe('gRPC UNAVAILABLE: gone');
  });
});
