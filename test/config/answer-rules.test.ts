// A member's answer rules from its config.
import { describe, expect, it } from 'vitest';
import { answerRules, MemberAnswerRules, parseIpPort, VERDICT_CACHE_SIZE } from '../../src/config/answer-rules.js';
import { eppAnswersSchema } from '../../src/config/schema.js';

const defaults = answerRules(eppAnswersSchema.parse({}));
const reason = (endpoint: string) => defaults.destinationRefusal(endpoint)?.reason;

describe('answerRules', () => {
  it.each(['10.1.0.1:8000', '[fd00::1]:8000', '203.0.113.9:443', '[2001:db8::1]:1'])('allows %s by default', (e) => {
    expect(reason(e)).toBeUndefined();
  });

  it.each([
    '169.254.169.254:80', '127.0.0.1:8000', '127.9.9.9:1', '[::1]:80', '[fe80::1]:80', '[fd00:ec2::254]:80', '0.0.0.0:80',
    '[::]:80', '224.0.0.1:5353', '[ff02::1]:1', '255.255.255.255:1',
    '[::ffff:169.254.169.254]:80', '[::ffff:7f00:1]:80', // IPv4-mapped: judged as the IPv4 address
    '[::7f00:1]:80', '[::a9fe:a9fe]:80', // IPv4-compatible (deprecated): ::/96
    '[64:ff9b::a9fe:a9fe]:80', '[64:ff9b:1::7f00:1]:80', // NAT64 prefixes: reach an IPv4 host through a translator
  ])('denies %s by default', (e) => {
    expect(reason(e)).toBe('destination_denied');
  });

  it.each(['metadata.google.internal:80', '169.254.169.254', '10.0.0.1:0', '10.0.0.1:65536', '0251.0376.0251.0376:80', '[fd00::1]', 'fd00::1:80', ' 10.0.0.1:80', '10.0.0.1:80/x'])(
    'refuses %s as not ip:port',
    (e) => {
      expect(reason(e)).toBe('destination_invalid');
    },
  );

  it('allow narrows, deny wins inside allow', () => {
    const r = answerRules(eppAnswersSchema.parse({ destinations: { allow: ['10.20.0.0/16'], deny: ['10.20.9.0/24'] } }));
    expect(r.destinationRefusal('10.20.1.1:80')).toBeUndefined();
    expect(r.destinationRefusal('10.21.1.1:80')?.detail).toBe('10.21.1.1:80 is outside destinations.allow');
    expect(r.destinationRefusal('10.20.9.9:80')?.detail).toBe('10.20.9.9:80 is inside destinations.deny');
  });

  it('remembers verdicts, the same on every ask, and stays right when its bounded memory starts over', () => {
    const r = answerRules(eppAnswersSchema.parse({ destinations: { deny: ['10.9.0.0/16'] } }));
    for (let round = 0; round < 2; round++) {
      expect(r.destinationRefusal('10.9.1.1:80')?.reason).toBe('destination_denied');
      expect(r.destinationRefusal('10.8.1.1:80')).toBeUndefined();
      expect(r.destinationRefusal('nope')?.reason).toBe('destination_invalid');
    }
    // A hostile EPP naming a new destination on every answer fills the memory: it starts over, verdicts stay right.
    for (let i = 0; i < VERDICT_CACHE_SIZE + 10; i++) r.destinationRefusal(`10.${i >> 8 & 255}.${i & 255}.1:80`);
    expect(r.destinationRefusal('10.9.1.1:80')?.reason).toBe('destination_denied');
    expect(r.destinationRefusal('10.8.1.1:80')).toBeUndefined();
  });

  it('parseIpPort normalises IPv4-mapped IPv6', () => {
    expect(parseIpPort('[::ffff:10.0.0.1]:80')).toEqual({ ip: '10.0.0.1', family: 'ipv4' });
    expect(parseIpPort('[fd00::1]:80')).toEqual({ ip: 'fd00::1', family: 'ipv6' });
  });

  it('members without their own config get the defaults', () => {
    const m = new MemberAnswerRules({ clusters: [{ name: 'a', eppAnswers: eppAnswersSchema.parse({ destinations: { allow: ['127.0.0.0/8'], deny: [] } }) }] as never });
    expect(m.of('a').destinationRefusal('127.0.0.1:1')).toBeUndefined();
    expect(m.of('b').destinationRefusal('127.0.0.1:1')?.reason).toBe('destination_denied');
  });
});
