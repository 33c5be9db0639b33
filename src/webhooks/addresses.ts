import { BlockList, isIP } from 'node:net';

/** One range webhooks are not delivered to, with what it is (for the refusal message). */
interface SpecialRange {
  readonly cidr: string;
  readonly what: string;
  readonly list: BlockList;
}

function range(network: string, prefix: number, what: string): SpecialRange {
  const family = isIP(network) === 4 ? 'ipv4' : 'ipv6';
  const list = new BlockList();
  list.addSubnet(network, prefix, family);
  return { cidr: `${network}/${prefix}`, what, list };
}

/**
 * IPv4 ranges that are not globally reachable (IANA's special-purpose registry): an internal
 * service, this host, or no single host at all (multicast, broadcast).
 */
const IPV4_RANGES: readonly SpecialRange[] = [
  range('0.0.0.0', 8, 'this network'),
  range('10.0.0.0', 8, 'private'),
  range('100.64.0.0', 10, 'shared address space (CGNAT)'),
  range('127.0.0.0', 8, 'loopback'),
  range('169.254.0.0', 16, 'link-local, cloud metadata'),
  range('172.16.0.0', 12, 'private'),
  range('192.0.0.0', 24, 'IETF protocol assignments'),
  range('192.0.2.0', 24, 'documentation'),
  range('192.88.99.0', 24, '6to4 relay anycast'),
  range('192.168.0.0', 16, 'private'),
  range('198.18.0.0', 15, 'benchmarking'),
  range('198.51.100.0', 24, 'documentation'),
  range('203.0.113.0', 24, 'documentation'),
  range('224.0.0.0', 4, 'multicast'),
  range('240.0.0.0', 4, 'reserved, and the broadcast address'),
];

/** IPv6 ranges likewise. Those that embed an IPv4 address (below) are judged by that address. */
const IPV6_RANGES: readonly SpecialRange[] = [
  range('::', 128, 'unspecified'),
  range('::1', 128, 'loopback'),
  range('100::', 64, 'discard-only'),
  range('64:ff9b:1::', 48, 'local-use NAT64'),
  range('2001:db8::', 32, 'documentation'),
  range('fc00::', 7, 'unique local'),
  range('fe80::', 10, 'link-local'),
  range('fec0::', 10, 'site-local'),
  range('ff00::', 8, 'multicast'),
];

/** The 16 bytes of a valid IPv6 address (zone id dropped; a dotted IPv4 tail is read as its two groups). */
function ipv6Bytes(address: string): Uint8Array {
  let text = address.split('%')[0]!;
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? (text.split('::') as [string, string]) : [text, null];
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === null || tail === '' ? [] : tail.split(':');
  const zeros = tail === null ? [] : Array<string>(8 - headGroups.length - tailGroups.length).fill('0');
  const bytes = new Uint8Array(16);
  [...headGroups, ...zeros, ...tailGroups].forEach((group, i) => {
    const value = Number.parseInt(group, 16);
    bytes[2 * i] = value >> 8;
    bytes[2 * i + 1] = value & 0xff;
  });
  return bytes;
}

const ipv4At = (bytes: Uint8Array, at: number, mask = 0): string => [0, 1, 2, 3].map((i) => (bytes[at + i]! ^ mask).toString()).join('.');

const zeroUpTo = (bytes: Uint8Array, end: number): boolean => bytes.subarray(0, end).every((byte) => byte === 0);

/**
 * The IPv4 addresses an IPv6 address carries, which is where its packets end up: IPv4-mapped
 * (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d), IPv4-translated (::ffff:0:a.b.c.d), NAT64's
 * well-known prefix (64:ff9b::/96), 6to4 (2002:AABB:CCDD::/48) and Teredo (2001::/32: the
 * server, and the client with its bits inverted).
 */
export function embeddedIpv4(address: string): string[] {
  const b = ipv6Bytes(address);
  if (zeroUpTo(b, 10) && b[10] === 0xff && b[11] === 0xff) return [ipv4At(b, 12)];
  if (zeroUpTo(b, 12)) return [ipv4At(b, 12)];
  if (zeroUpTo(b, 8) && b[8] === 0xff && b[9] === 0xff && b[10] === 0 && b[11] === 0) return [ipv4At(b, 12)];
  if (b[0] === 0 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && b.subarray(4, 12).every((byte) => byte === 0))
    return [ipv4At(b, 12)];
  if (b[0] === 0x20 && b[1] === 0x02) return [ipv4At(b, 2)];
  if (b[0] === 0x20 && b[1] === 0x01 && b[2] === 0 && b[3] === 0) return [ipv4At(b, 4), ipv4At(b, 12, 0xff)];
  return [];
}

/**
 * Why webhooks are not delivered to `address` (an IP address) unless allowed: the special range
 * it is in (`127.0.0.1 is in 127.0.0.0/8 (loopback)`), or null for a globally reachable one.
 * Anything that is not an IP address is refused.
 */
export function specialRange(address: string): string | null {
  const family = isIP(address.split('%')[0]!);
  if (family === 0) return `${address} is not an IP address`;
  if (family === 4) {
    const hit = IPV4_RANGES.find((r) => r.list.check(address, 'ipv4'));
    return hit ? `${address} is in ${hit.cidr} (${hit.what})` : null;
  }
  const bare = address.split('%')[0]!;
  const hit = IPV6_RANGES.find((r) => r.list.check(bare, 'ipv6'));
  if (hit) return `${address} is in ${hit.cidr} (${hit.what})`;
  for (const ipv4 of embeddedIpv4(bare)) {
    const inner = IPV4_RANGES.find((r) => r.list.check(ipv4, 'ipv4'));
    if (inner) return `${address} carries ${ipv4}, in ${inner.cidr} (${inner.what})`;
  }
  return null;
}

/** The IP address a URL's host is written as (`[::1]` → `::1`), or null for a host name. */
export function literalAddress(url: URL): string | null {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return isIP(host) === 0 ? null : host;
}

export interface ReceiverGuardOptions {
  /** False turns the guard off: every address is delivered to. */
  readonly enabled: boolean;
  /** Internal receivers delivered to all the same: IP addresses, CIDR ranges, exact host names. */
  readonly allowed: readonly string[];
}

/**
 * Which receivers webhooks may reach: globally reachable addresses, and the internal ones the
 * allow list names. Without it an admin could point a webhook at an internal service (cloud
 * metadata, an admin port) and read the first 4 KiB of its answer in the delivery log.
 */
export class ReceiverGuard {
  private readonly allowedNames = new Set<string>();
  private readonly allowedAddresses = new BlockList();

  constructor(private readonly options: ReceiverGuardOptions) {
    for (const entry of options.allowed) {
      const [network, prefix] = entry.split('/') as [string, string | undefined];
      const family = isIP(network);
      if (family === 0) this.allowedNames.add(entry.toLowerCase().replace(/\.$/, ''));
      else
        this.allowedAddresses.addSubnet(
          network,
          prefix === undefined ? (family === 4 ? 32 : 128) : Number(prefix),
          family === 4 ? 'ipv4' : 'ipv6',
        );
    }
  }

  /**
   * Why a receiver named `host` (as the URL writes it) may not be reached at `address`, or null
   * when it may. A host the allow list names may be reached at any address.
   */
  refusal(host: string, address: string): string | null {
    if (!this.options.enabled) return null;
    const name = host
      .replace(/^\[(.*)\]$/, '$1')
      .toLowerCase()
      .replace(/\.$/, '');
    if (this.allowedNames.has(name)) return null;
    const bare = address.split('%')[0]!;
    const family = isIP(bare);
    if (family !== 0 && this.allowedAddresses.check(bare, family === 4 ? 'ipv4' : 'ipv6')) return null;
    const reason = specialRange(address);
    if (reason === null) return null;
    const resolved = name === bare ? '' : `${host} resolved to `;
    return `${resolved}${reason}: not a public address, and SWITCHBOARD_WEBHOOK_ALLOWED_HOSTS does not name it`;
  }

  /** The refusal of a URL whose host is an IP address, known without resolving anything; null for a name. */
  literalRefusal(url: URL): string | null {
    const literal = literalAddress(url);
    return literal === null ? null : this.refusal(url.hostname, literal);
  }
}
