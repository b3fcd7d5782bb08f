import { BlockList, isIP } from 'node:net'

/**
 * Address ranges that are not the public internet: loopback, private,
 * link-local (cloud metadata at 169.254.169.254), CGNAT, unspecified,
 * multicast, reserved, documentation and benchmarking ranges. IPv4-mapped
 * IPv6 addresses (`::ffff:a.b.c.d`) match the IPv4 rules.
 */
const NON_PUBLIC: Array<[string, number, 'ipv4' | 'ipv6', string]> = [
  ['0.0.0.0', 8, 'ipv4', 'unspecified ("this network")'],
  ['10.0.0.0', 8, 'ipv4', 'private (RFC 1918)'],
  ['100.64.0.0', 10, 'ipv4', 'carrier-grade NAT'],
  ['127.0.0.0', 8, 'ipv4', 'loopback'],
  ['169.254.0.0', 16, 'ipv4', 'link-local (cloud metadata)'],
  ['172.16.0.0', 12, 'ipv4', 'private (RFC 1918)'],
  ['192.0.0.0', 24, 'ipv4', 'IETF protocol assignments'],
  ['192.0.2.0', 24, 'ipv4', 'documentation'],
  ['192.168.0.0', 16, 'ipv4', 'private (RFC 1918)'],
  ['198.18.0.0', 15, 'ipv4', 'benchmarking'],
  ['198.51.100.0', 24, 'ipv4', 'documentation'],
  ['203.0.113.0', 24, 'ipv4', 'documentation'],
  ['224.0.0.0', 4, 'ipv4', 'multicast'],
  ['240.0.0.0', 4, 'ipv4', 'reserved'],
  ['::', 128, 'ipv6', 'unspecified'],
  ['::1', 128, 'ipv6', 'loopback'],
  ['::', 96, 'ipv6', 'IPv4-compatible'],
  ['100::', 64, 'ipv6', 'discard'],
  ['2001:db8::', 32, 'ipv6', 'documentation'],
  ['fc00::', 7, 'ipv6', 'unique local (private)'],
  ['fe80::', 10, 'ipv6', 'link-local'],
  ['fec0::', 10, 'ipv6', 'site-local'],
  ['ff00::', 8, 'ipv6', 'multicast'],
]

// Built on first use: a BlockList holds a native handle, which dsh's startup snapshot cannot carry.
let lists: Array<{ list: BlockList; label: string }> | undefined
const blockLists = () =>
  (lists ??= NON_PUBLIC.map(([network, prefix, family, label]) => {
    const list = new BlockList()
    list.addSubnet(network, prefix, family)
    return { list, label }
  }))

/** The 16-bit groups of an IPv6 address. */
function ipv6Groups(address: string): number[] {
  const [head = '', tail] = address.split('::') as [string, string | undefined]
  const parse = (part: string): number[] => {
    if (!part) return []
    const groups: number[] = []
    for (const piece of part.split(':')) {
      if (piece.includes('.')) {
        const [a = 0, b = 0, c = 0, d = 0] = piece.split('.').map(Number)
        groups.push((a << 8) | b, (c << 8) | d)
      } else groups.push(Number.parseInt(piece, 16))
    }
    return groups
  }
  const first = parse(head)
  if (tail === undefined) return first
  const last = parse(tail)
  return [...first, ...Array(8 - first.length - last.length).fill(0), ...last]
}

/** The IPv4 address a NAT64 (64:ff9b::/96) address carries, if it is one. */
function nat64Embedded(address: string): string | undefined {
  const g = ipv6Groups(address)
  if (g.length !== 8 || g[0] !== 0x64 || g[1] !== 0xff9b || g.slice(2, 6).some((x) => x !== 0)) return undefined
  const [hi = 0, lo = 0] = g.slice(6)
  return [hi >> 8, hi & 255, lo >> 8, lo & 255].join('.')
}

/** Why `address` is not a public internet address, or undefined when it is one. */
export function nonPublicReason(address: string): string | undefined {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '')
  const version = isIP(bare)
  if (version === 0) return 'not an IP address'
  const family = version === 4 ? 'ipv4' : 'ipv6'
  for (const { list, label } of blockLists()) if (list.check(bare, family)) return label
  const embedded = version === 6 ? nat64Embedded(bare) : undefined
  if (embedded) {
    const reason = nonPublicReason(embedded)
    if (reason) return `${reason}, through NAT64`
  }
  return undefined
}
