import { describe, expect, it } from 'vitest';
import { isIP, isIPv4, isIPv6, joinHostPort, parseHostPort } from '../../src/snapshot/address.js';

describe('IP literals', () => {
  it.each(['10.0.0.1', '0.0.0.0', '255.255.255.255'])('%s is IPv4', (s) => expect(isIPv4(s)).toBe(true));
  it.each(['256.1.1.1', '10.0.0', '10.0.0.01', 'a.b.c.d', ''])('%s is not IPv4', (s) => expect(isIPv4(s)).toBe(false));
  it.each(['::1', '::', 'fd00::1', '2001:db8:0:0:0:0:0:1', '1:2:3:4:5:6:7::', '::ffff:10.0.0.1', '64:ff9b::192.0.2.33'])('%s is IPv6', (s) =>
    expect(isIPv6(s)).toBe(true),
  );
  it.each(['1::2::3', '2001:db8', '1:2:3:4:5:6:7:8:9', 'fe80::1%eth0', 'gggg::1', 'example.com', '1:2:3:4:5:6:7:8::'])('%s is not IPv6', (s) =>
    expect(isIPv6(s)).toBe(false),
  );
  it('isIP accepts either family and rejects names', () => {
    expect(isIP('10.1.2.3')).toBe(true);
    expect(isIP('fd00::2')).toBe(true);
    expect(isIP('gw.example.com')).toBe(false);
  });
});

describe('host:port', () => {
  it('brackets IPv6 hosts when joining', () => {
    expect(joinHostPort('10.0.0.1', 80)).toBe('10.0.0.1:80');
    expect(joinHostPort('fd00::1', 9002)).toBe('[fd00::1]:9002');
    expect(joinHostPort('epp.example.com', 9002)).toBe('epp.example.com:9002');
  });
  it('parses host, host:port, [v6], [v6]:port and bare v6', () => {
    expect(parseHostPort('epp.local')).toEqual({ host: 'epp.local' });
    expect(parseHostPort('10.0.0.1:9002')).toEqual({ host: '10.0.0.1', port: 9002 });
    expect(parseHostPort('[fd00::1]')).toEqual({ host: 'fd00::1' });
    expect(parseHostPort('[fd00::1]:8080')).toEqual({ host: 'fd00::1', port: 8080 });
    expect(parseHostPort('fd00::1')).toEqual({ host: 'fd00::1' });
  });
  it.each(['', ':80', '10.0.0.1:0', '10.0.0.1:65536', '10.0.0.1:x', '[fd00::1]x', '[]:80', 'a:b:c'])('rejects %j', (s) =>
    expect(parseHostPort(s)).toBeUndefined(),
  );
});
