import { Metadata } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { channelCredentials, EppClientPool, forwardedHeaders, identityHostFor, serverNameFor, targetKey } from '../../src/extproc/epp-client.js';
import { ErrorCode, RouterError } from '../../src/extproc/errors.js';
import type { EppTarget } from '../../src/snapshot/types.js';
import { blackHole } from './scenario.js';
import { withinProcessMs } from '../helpers/work-time.js';

function target(address: string, tls: Partial<EppTarget['tls']> = {}): EppTarget {
  const [host, port] = address.split(':');
  return {
    address,
    host: host!,
    port: Number(port),
    cluster: 'c',
    service: { namespace: 'ns', name: 'epp' },
    source: 'override',
    tls: { enabled: false, insecureSkipVerify: true, ...tls },
  };
}

describe('forwardedHeaders', () => {
  it("keeps Envoy's custom metadata from a grpc-js call, drops transport and gRPC-reserved keys", () => {
    const md = new Metadata();
    md.set('x-route-tag', 'a');
    md.add('x-multi', '1');
    md.add('x-multi', '2');
    md.set('x-bin-bin', Buffer.from([1, 2]));
    md.set('user-agent', 'envoy');
    md.set('content-type', 'application/grpc');
    md.set('grpc-timeout', '1S');
    md.set('te', 'trailers');
    const out = forwardedHeaders(md.toHttp2Headers());
    expect(Object.keys(out).sort()).toEqual(['x-bin-bin', 'x-multi', 'x-route-tag']);
    // What a grpc-js EPP call carries: the same metadata back.
    const back = Metadata.fromHttp2Headers(out as Record<string, string[]>);
    expect(back.get('x-multi')).toEqual(['1', '2']);
    expect(back.get('x-bin-bin')).toEqual([Buffer.from([1, 2])]);
  });

  it('keeps custom headers of an HTTP/2 request as received, without pseudo-headers', () => {
    const out = forwardedHeaders({
      ':method': 'POST',
      ':path': '/envoy.service.ext_proc.v3.ExternalProcessor/Process',
      ':authority': 'router',
      ':scheme': 'http',
      'content-type': 'application/grpc',
      te: 'trailers',
      'grpc-accept-encoding': 'identity',
      'x-route-tag': 'blue',
      'x-trace-bin': 'AQI=',
      'set-cookie': ['a=1', 'b=2'],
    });
    expect(out).toEqual({ 'x-route-tag': 'blue', 'x-trace-bin': 'AQI=', 'set-cookie': ['a=1', 'b=2'] });
  });

  it('sends a repeated binary key as one header field per value, as it came from Envoy (node:http2 joins them with ", ")', () => {
    // A peer that decodes a -bin field as one base64 value (grpc-go) would refuse "AQI=, AwQ=".
    const out = forwardedHeaders({ ':path': '/p', 'x-trace-bin': 'AQI=, AwQ=', 'x-tag': 'a, b' });
    expect(out).toEqual({ 'x-trace-bin': ['AQI=', 'AwQ='], 'x-tag': 'a, b' });
    const md = Metadata.fromHttp2Headers(out as Record<string, string[]>);
    expect(md.get('x-trace-bin')).toEqual([Buffer.from([1, 2]), Buffer.from([3, 4])]);
  });
});

describe('targetKey', () => {
  it('separates the same address with different TLS settings', () => {
    const keys = new Set([
      targetKey(target('10.0.0.1:9002')),
      targetKey(target('10.0.0.1:9002', { enabled: true })),
      targetKey(target('10.0.0.1:9002', { enabled: true, caFile: '/ca.pem' })),
      targetKey(target('10.0.0.1:9002', { enabled: true, insecureSkipVerify: false })),
      targetKey(target('10.0.0.1:9002', { enabled: true, serverName: 'epp' })),
    ]);
    expect(keys.size).toBe(5);
    expect(targetKey(target('10.0.0.1:9002'))).toBe(targetKey(target('10.0.0.1:9002', { serverName: 'ignored-without-tls' })));
  });
});

describe('serverNameFor', () => {
  it('uses serverName, else the Service DNS name for an IP host (never an IP as SNI), else none', () => {
    expect(serverNameFor(target('10.0.0.1:9002', { enabled: true, serverName: 'epp.example' }))).toBe('epp.example');
    expect(serverNameFor(target('10.0.0.1:9002', { enabled: true }))).toBe('epp.ns.svc');
    expect(serverNameFor(target('10.0.0.1:9002', { enabled: true, insecureSkipVerify: false }))).toBe('epp.ns.svc');
    expect(serverNameFor(target('10.0.0.1:9002', { enabled: true, caFile: '/ca.pem' }))).toBe('epp.ns.svc');
    expect(serverNameFor({ ...target('[::1]:9002', { enabled: true, caFile: '/ca.pem' }), host: '[::1]' })).toBe('epp.ns.svc');
    expect(serverNameFor({ ...target('epp.example:9002', { enabled: true }), host: 'epp.example' })).toBeUndefined();
    expect(serverNameFor(target('10.0.0.1:9002'))).toBeUndefined();
  });
});

describe('identityHostFor', () => {
  it('a verified IP host without serverName is verified as that IP; otherwise the SNI is the name verified', () => {
    expect(identityHostFor(target('10.0.0.1:9002', { enabled: true, caFile: '/ca.pem' }))).toBe('10.0.0.1');
    expect(identityHostFor(target('10.0.0.1:9002', { enabled: true, insecureSkipVerify: false }))).toBe('10.0.0.1');
    expect(identityHostFor({ ...target('[::1]:9002', { enabled: true, caFile: '/ca.pem' }), host: '[::1]' })).toBe('::1');
    expect(identityHostFor(target('10.0.0.1:9002', { enabled: true, caFile: '/ca.pem', serverName: 'epp.example' }))).toBeUndefined();
    expect(identityHostFor({ ...target('epp.example:9002', { enabled: true, caFile: '/ca.pem' }), host: 'epp.example' })).toBeUndefined();
    expect(identityHostFor(target('10.0.0.1:9002', { enabled: true }))).toBeUndefined(); // nothing verified
    expect(identityHostFor(target('10.0.0.1:9002'))).toBeUndefined();
  });
});

describe('channelCredentials', () => {
  const read = (p: string): Buffer => {
    throw new Error(`ENOENT ${p}`);
  };
  it('plaintext and skip-verify need no files', () => {
    expect(channelCredentials({ enabled: false, insecureSkipVerify: true }, read)._isSecure()).toBe(false);
    expect(channelCredentials({ enabled: true, insecureSkipVerify: true }, read)._isSecure()).toBe(true);
  });
  it('a client certificate needs both files', () => {
    expect(() => channelCredentials({ enabled: true, insecureSkipVerify: true, certFile: '/c.pem' }, read)).toThrow(/set together/);
  });
  it('an unreadable file is an EppUnavailable error naming it', () => {
    try {
      channelCredentials({ enabled: true, insecureSkipVerify: false, caFile: '/missing.pem' }, read);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(RouterError);
      expect((err as RouterError).code).toBe(ErrorCode.EppUnavailable);
      expect((err as RouterError).message).toContain('/missing.pem');
    }
  });
});

describe('EppClientPool', () => {
  it('shares a channel per target and evicts targets no longer in the snapshot', async () => {
    const pool = new EppClientPool({ maxMessageBytes: 1 << 20, connectTimeoutMs: 50 });
    const a = target('127.0.0.1:1');
    const b = target('127.0.0.1:2');
    // Nothing listens on ports 1 and 2: ready() resolves (the call would fail at once) or times out.
    await Promise.allSettled([pool.ready(a), pool.ready({ ...a }), pool.ready(b)]);
    expect(pool.size()).toBe(2);
    const call = pool.call(a, {});
    const status = await new Promise<number>((resolve) => call.on('error', (e: { code: number }) => resolve(e.code)));
    expect(status).toBe(14); // UNAVAILABLE, with grpc-js's reason
    pool.retain([b]);
    expect(pool.size()).toBe(1);
    pool.close();
    expect(pool.size()).toBe(0);
    await expect(pool.ready(b)).rejects.toMatchObject({ code: ErrorCode.EppUnavailable });
  });

  it('gives a cold channel at most connectTimeoutMs', async () => {
    const hole = await blackHole();
    const pool = new EppClientPool({ maxMessageBytes: 1 << 20, connectTimeoutMs: 150 });
    try {
      await withinProcessMs(1000, 'cold channel', () => expect(pool.ready(target(hole.address, { enabled: true }))).rejects.toThrow(/within 150 ms/));
    } finally {
      pool.close();
      hole.close();
    }
  });
});

describe('RouterError', () => {
  it('maps codes to HTTP status, gRPC status and outcome', () => {
    const e = new RouterError(ErrorCode.NoRoute, 'nope');
    expect([e.userFacing, e.httpStatus, e.outcome]).toEqual([true, 404, 'no_route']);
    expect(e.responseBody()).toEqual({ error: { type: 'no_route', message: 'nope' } });
    const i = RouterError.from(new TypeError('bug'));
    expect([i.code, i.userFacing, i.outcome]).toEqual([ErrorCode.Internal, false, 'internal_error']);
    expect(i.cause).toBeInstanceOf(TypeError);
    expect(RouterError.from(e)).toBe(e);
    const w = e.withContext('request_headers');
    expect([w.code, w.message]).toEqual([ErrorCode.NoRoute, 'request_headers: nope']);
  });
});
