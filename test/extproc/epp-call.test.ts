import { Metadata } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { forwardedHeaders } from '../../src/extproc/epp-call.js';

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
