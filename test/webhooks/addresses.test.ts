import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { embeddedIpv4, ReceiverGuard, specialRange } from '../../src/webhooks/addresses.js';

// Issue 34 item 15: the guard missed IPv4-compatible, NAT64 and 6to4 forms, 198.18/15,
// multicast and broadcast. Classification only: nothing here sends a packet.

/** The IPv4 ranges webhooks must not reach (IANA special-purpose, not globally reachable). */
const BLOCKED_IPV4: [string, number][] = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
];

const toInt = (ip: string) => ip.split('.').reduce((n, part) => n * 256 + Number(part), 0);
const toIp = (n: number) => [24, 16, 8, 0].map((shift) => Math.floor(n / 2 ** shift) % 256).join('.');
const inBlockedRange = (ip: string) =>
  BLOCKED_IPV4.some(([network, prefix]) => Math.floor(toInt(ip) / 2 ** (32 - prefix)) === Math.floor(toInt(network) / 2 ** (32 - prefix)));
const hex = (n: number) => n.toString(16);

/** Every IPv6 form that carries `ip`, as written by people and as URL/DNS normalize it. */
function embeddings(ip: string): string[] {
  const n = toInt(ip);
  const high = hex(Math.floor(n / 65536));
  const low = hex(n % 65536);
  const inverted = 0xffffffff - n;
  const forms = [
    `::ffff:${ip}`,
    `::ffff:${high}:${low}`,
    `0:0:0:0:0:ffff:${high}:${low}`,
    `::${ip}`,
    `::${high}:${low}`,
    `::ffff:0:${ip}`,
    `::ffff:0:${high}:${low}`,
    `64:ff9b::${ip}`,
    `64:ff9b::${high}:${low}`,
    `2002:${high}:${low}::`,
    `2002:${high}:${low}:1234::5`,
    // Teredo: the server's address, then the client's with its bits inverted.
    `2001:0:${high}:${low}:0:0:${hex(Math.floor(inverted / 65536))}:${hex(inverted % 65536)}`,
  ];
  // As a URL's host, the way a webhook URL arrives (normalized to hex groups by URL).
  return [...forms, ...forms.map((form) => new URL(`http://[${form}]/`).hostname.slice(1, -1))];
}

const blockedIpv4 = fc
  .constantFrom(...BLOCKED_IPV4)
  .chain(([network, prefix]) => fc.integer({ min: 0, max: 2 ** (32 - prefix) - 1 }).map((offset) => toIp(toInt(network) + offset)));

describe('webhook receiver addresses: classification', () => {
  it.each([
    ['0.0.0.0', '0.0.0.0/8'],
    ['10.20.30.40', '10.0.0.0/8'],
    ['100.64.0.1', '100.64.0.0/10'],
    ['100.127.255.255', '100.64.0.0/10'],
    ['127.0.0.1', '127.0.0.0/8'],
    ['127.255.255.254', '127.0.0.0/8'],
    ['169.254.169.254', '169.254.0.0/16'],
    ['172.16.0.1', '172.16.0.0/12'],
    ['172.31.255.255', '172.16.0.0/12'],
    ['192.0.0.8', '192.0.0.0/24'],
    ['192.0.2.1', '192.0.2.0/24'],
    ['192.88.99.1', '192.88.99.0/24'],
    ['192.168.1.1', '192.168.0.0/16'],
    ['198.18.0.1', '198.18.0.0/15'],
    ['198.19.255.255', '198.18.0.0/15'],
    ['198.51.100.7', '198.51.100.0/24'],
    ['203.0.113.9', '203.0.113.0/24'],
    ['224.0.0.1', '224.0.0.0/4'],
    ['239.255.255.250', '224.0.0.0/4'],
    ['240.0.0.1', '240.0.0.0/4'],
    ['255.255.255.255', '240.0.0.0/4'],
    ['::', '::/128'],
    ['::1', '::1/128'],
    ['0:0:0:0:0:0:0:1', '::1/128'],
    ['100::1', '100::/64'],
    ['64:ff9b:1::a00:1', '64:ff9b:1::/48'],
    ['2001:db8::1', '2001:db8::/32'],
    ['fc00::1', 'fc00::/7'],
    ['fd12:3456::1', 'fc00::/7'],
    ['fe80::1', 'fe80::/10'],
    ['fe80::1%eth0', 'fe80::/10'],
    ['febf::1', 'fe80::/10'],
    ['fec0::1', 'fec0::/10'],
    ['ff02::1', 'ff00::/8'],
    ['ff05::1:3', 'ff00::/8'],
    ['::ffff:127.0.0.1', '127.0.0.0/8'],
    ['::ffff:7f00:1', '127.0.0.0/8'],
    ['::127.0.0.1', '127.0.0.0/8'],
    ['::a9fe:a9fe', '169.254.0.0/16'],
    ['::ffff:0:10.0.0.1', '10.0.0.0/8'],
    ['64:ff9b::169.254.169.254', '169.254.0.0/16'],
    ['64:ff9b::a00:1', '10.0.0.0/8'],
    ['2002:c0a8:101::1', '192.168.0.0/16'],
    ['2002:7f00:1::', '127.0.0.0/8'],
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', '127.0.0.0/8'],
  ])('%s is refused: in %s', (address, cidr) => {
    expect(specialRange(address)).toContain(`in ${cidr} (`);
  });

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '100.63.255.255',
    '100.128.0.0',
    '172.15.255.255',
    '172.32.0.0',
    '192.0.1.255',
    '192.88.98.255',
    '198.17.255.255',
    '198.20.0.0',
    '223.255.255.255',
    '2606:4700:4700::1111',
    '2a00:1450:4001:80b::200e',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
    '2002:808:808::1',
    '2001:0:4136:e378:8000:63bf:f7f7:f7f7',
  ])('%s is public', (address) => {
    expect(specialRange(address)).toBeNull();
  });

  it('refuses what is no IP address', () => {
    expect(specialRange('localhost')).toBe('localhost is not an IP address');
  });

  it('reads the IPv4 address out of every IPv6 form that carries one', () => {
    expect(embeddedIpv4('::ffff:1.2.3.4')).toEqual(['1.2.3.4']);
    expect(embeddedIpv4('::102:304')).toEqual(['1.2.3.4']);
    expect(embeddedIpv4('::ffff:0:102:304')).toEqual(['1.2.3.4']);
    expect(embeddedIpv4('64:ff9b::1.2.3.4')).toEqual(['1.2.3.4']);
    expect(embeddedIpv4('2002:102:304:5::6')).toEqual(['1.2.3.4']);
    expect(embeddedIpv4('2001:0:102:304::fefd:fcfb')).toEqual(['1.2.3.4', '1.2.3.4']);
    expect(embeddedIpv4('2606:4700::1111')).toEqual([]);
  });

  it('property: an IPv4 address in a refused range is refused in every IPv6 form that carries it', () => {
    fc.assert(
      fc.property(blockedIpv4, (ip) => {
        expect(specialRange(ip), ip).not.toBeNull();
        for (const form of embeddings(ip)) expect(specialRange(form), form).not.toBeNull();
      }),
      { numRuns: 200 },
    );
  });

  it('property: any IPv4 address is judged the same in every IPv6 form that carries it', () => {
    fc.assert(
      fc.property(fc.ipV4(), (ip) => {
        const refused = inBlockedRange(ip);
        expect(specialRange(ip) !== null, ip).toBe(refused);
        for (const form of embeddings(ip)) expect(specialRange(form) !== null, form).toBe(refused);
      }),
      { numRuns: 200 },
    );
  });
});

describe('webhook receiver addresses: the guard and its allow list', () => {
  const guard = new ReceiverGuard({ enabled: true, allowed: ['10.1.0.0/16', '127.0.0.1', 'fd00::5', 'Hooks.Internal.'] });

  it('lets through public addresses, and internal ones the allow list names by address or range', () => {
    expect(guard.refusal('8.8.8.8', '8.8.8.8')).toBeNull();
    expect(guard.refusal('example.com', '2606:4700:4700::1111')).toBeNull();
    expect(guard.refusal('10.1.200.3', '10.1.200.3')).toBeNull();
    expect(guard.refusal('127.0.0.1', '127.0.0.1')).toBeNull();
    expect(guard.refusal('[fd00::5]', 'fd00::5')).toBeNull();
  });

  it('lets a host name the allow list names through at any address, whatever its case or final dot', () => {
    expect(guard.refusal('hooks.internal', '10.9.9.9')).toBeNull();
    expect(guard.refusal('HOOKS.internal.', '192.168.0.1')).toBeNull();
    expect(guard.refusal('other.internal', '10.9.9.9')).toBe(
      'other.internal resolved to 10.9.9.9 is in 10.0.0.0/8 (private): not a public address, and SWITCHBOARD_WEBHOOK_ALLOWED_HOSTS does not name it',
    );
  });

  it('refuses the rest of a range, and internal addresses outside the allow list', () => {
    expect(guard.refusal('10.2.0.1', '10.2.0.1')).toMatch(/^10\.2\.0\.1 is in 10\.0\.0\.0\/8 \(private\): not a public address/);
    expect(guard.refusal('127.0.0.2', '127.0.0.2')).toMatch(/127\.0\.0\.0\/8 \(loopback\)/);
    expect(guard.refusal('[fd00::6]', 'fd00::6')).toMatch(/fc00::\/7 \(unique local\)/);
    expect(guard.refusal('[::ffff:a02:1]', '::ffff:a02:1')).toMatch(/carries 10\.2\.0\.1, in 10\.0\.0\.0\/8/);
    expect(guard.literalRefusal(new URL('http://[64:ff9b::a9fe:a9fe]/latest'))).toMatch(/169\.254\.0\.0\/16/);
    expect(guard.literalRefusal(new URL('http://receiver.example/'))).toBeNull();
  });

  it('refuses nothing when turned off', () => {
    expect(new ReceiverGuard({ enabled: false, allowed: [] }).refusal('127.0.0.1', '127.0.0.1')).toBeNull();
  });
});
