import { status as Status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import {
  decodeGrpcMessage,
  encodeGrpcMessage,
  formatGrpcTimeout,
  parseGrpcTimeout,
  statusFromHttp,
  statusFromTrailers,
} from '../../src/transport/grpc-status.js';

describe('grpc-message', () => {
  it('percent-encodes what is not printable ASCII, and %', () => {
    expect(encodeGrpcMessage('plain text: ok')).toBe('plain text: ok');
    expect(encodeGrpcMessage('100% über\n')).toBe('100%25 %C3%BCber%0A');
    expect(decodeGrpcMessage('100%25 %C3%BCber%0A')).toBe('100% über\n');
    expect(decodeGrpcMessage('bad %zz escape %')).toBe('bad %zz escape %');
  });
});

describe('grpc-timeout', () => {
  it('parses every unit', () => {
    expect(parseGrpcTimeout('2H')).toBe(7_200_000);
    expect(parseGrpcTimeout('3M')).toBe(180_000);
    expect(parseGrpcTimeout('4S')).toBe(4000);
    expect(parseGrpcTimeout('250m')).toBe(250);
    expect(parseGrpcTimeout('1500u')).toBe(1.5);
    expect(parseGrpcTimeout('2000000n')).toBe(2);
    expect(parseGrpcTimeout(undefined)).toBeUndefined();
  });

  it('refuses malformed values', () => {
    for (const v of ['', '10', '123456789S', '1x', '-1S', '1.5S']) expect(() => parseGrpcTimeout(v), v).toThrow(RangeError);
  });

  it('formats milliseconds within 8 digits', () => {
    expect(formatGrpcTimeout(1500.2)).toBe('1501m');
    expect(formatGrpcTimeout(1e9)).toBe('1000000S');
    expect(parseGrpcTimeout(formatGrpcTimeout(30_000))).toBe(30_000);
  });
});

describe('status mapping', () => {
  it('maps HTTP statuses of non-gRPC responses', () => {
    expect(statusFromHttp(404)).toBe(Status.UNIMPLEMENTED);
    expect(statusFromHttp(503)).toBe(Status.UNAVAILABLE);
    expect(statusFromHttp(401)).toBe(Status.UNAUTHENTICATED);
    expect(statusFromHttp(500)).toBe(Status.UNKNOWN);
  });

  it('reads grpc-status and the decoded grpc-message from trailers', () => {
    expect(statusFromTrailers({ 'grpc-status': '14', 'grpc-message': 'down%21' })).toEqual({ code: Status.UNAVAILABLE, details: 'down!' });
    expect(statusFromTrailers({ 'grpc-status': '99' })).toEqual({ code: Status.UNKNOWN, details: '' });
    expect(statusFromTrailers({})).toBeUndefined();
  });
});
