import { describe, expect, it } from 'vitest';
import { parseListenAddress } from '../../src/config/listen-address.js';

describe('parseListenAddress', () => {
  it.each([
    ['127.0.0.1:9002', { type: 'tcp', host: '127.0.0.1', port: 9002 }],
    ['0.0.0.0:0', { type: 'tcp', host: '0.0.0.0', port: 0 }],
    ['localhost:80', { type: 'tcp', host: 'localhost', port: 80 }],
    ['[::1]:9002', { type: 'tcp', host: '::1', port: 9002 }],
    ['unix:/var/run/mcip.sock', { type: 'unix', path: '/var/run/mcip.sock' }],
    ['unix:///var/run/mcip.sock', { type: 'unix', path: '/var/run/mcip.sock' }],
  ])('%s', (input, expected) => {
    expect(parseListenAddress(input)).toEqual(expected);
  });

  it.each(['9002', '127.0.0.1', '::1:9002', 'host:99999', 'unix:', 'a b:1'])('rejects %s with a message naming it', (input) => {
    expect(() => parseListenAddress(input)).toThrow(input);
  });
});
