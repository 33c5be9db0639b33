import { BlockList, isIP } from 'node:net';

/**
 * Addresses SWITCHBOARD_WEBHOOK_DENY_PRIVATE refuses: loopback, private, link-local, shared
 * (CGNAT), unspecified and unique-local ranges. BlockList also matches IPv4-mapped IPv6
 * addresses (::ffff:127.0.0.1) against the IPv4 ranges.
 */
const PRIVATE = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
] as const) {
  PRIVATE.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
] as const) {
  PRIVATE.addSubnet(network, prefix, 'ipv6');
}

/** True for an IP address in a loopback, private or link-local range. */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  return family !== 0 && PRIVATE.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** The IP address a URL's host is written as (`[::1]` → `::1`), or null for a host name. */
export function literalAddress(url: URL): string | null {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return isIP(host) === 0 ? null : host;
}
