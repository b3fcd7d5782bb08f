import ipaddr from 'ipaddr.js'

/**
 * What each range name of `ipaddr.js`'s `range()` means here: `public`, or
 * why an address in it is not one. The ranges themselves (the IANA IPv4 and
 * IPv6 special-purpose registries) are the library's; this table only says
 * how dsh treats them. A name missing here (a newer `ipaddr.js`) counts as
 * not public. Ranges that embed an IPv4 address are classified by that
 * address instead (see `embeddedIPv4`).
 */
export const RANGE_RULES: Readonly<Record<string, 'public' | string>> = {
  unicast: 'public',
  // IPv4
  unspecified: 'unspecified ("this network")',
  broadcast: 'broadcast',
  multicast: 'multicast',
  linkLocal: 'link-local (cloud metadata)',
  loopback: 'loopback',
  carrierGradeNat: 'carrier-grade NAT (100.64.0.0/10)',
  private: 'private (RFC 1918)',
  reserved: 'reserved (IETF protocol assignments, documentation, benchmarking or future use)',
  // Anycast services reachable from anywhere (IANA: globally reachable).
  as112: 'public',
  as112v6: 'public',
  amt: 'public',
  // IPv6
  uniqueLocal: 'unique local (fc00::/7, private)',
  deprecatedSiteLocal: 'site-local (fec0::/10)',
  discard: 'discard-only (100::/64)',
  benchmarking: 'benchmarking',
  deprecatedOrchid: 'ORCHID (an identifier, not a routable address)',
  orchid2: 'ORCHIDv2 (an identifier, not a routable address)',
  droneRemoteIdProtocolEntityTags: 'DRIP entity tag (an identifier, not a routable address)',
  segmentRouting: 'SRv6 segment identifier (5f00::/16)',
}

/** Names `range()` gives to IPv6 ranges that carry an IPv4 address. */
export type EmbeddingRange = 'ipv4Mapped' | 'rfc6145' | 'rfc6052' | '6to4' | 'teredo' | 'ipv4Compatible'

/**
 * Ranges `ipaddr.js` 2.5 does not know, checked before its own table. Each
 * entry: CIDR, name, and why it is not public (or the embedding it is).
 */
const EXTRA_RANGES: ReadonlyArray<[cidr: string, name: string, rule: string]> = [
  // RFC 4291 2.5.5.1: deprecated, `::a.b.c.d`. (`::` and `::1` are matched first.)
  ['::/96', 'ipv4Compatible', 'embeds'],
  // RFC 9780: a dummy prefix for documentation-like use, never routed.
  ['100:0:0:1::/64', 'dummyPrefix', 'dummy prefix (100:0:0:1::/64, never routed)'],
]

/** Everything outside 2000::/3 that no other rule named is unallocated or reserved by the IETF. */
const GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR('2000::/3')
export const OUTSIDE_GLOBAL_UNICAST = 'outside the global unicast space 2000::/3 (reserved or unallocated)'

const extras = EXTRA_RANGES.map(([cidr, name, rule]) => ({ range: ipaddr.IPv6.parseCIDR(cidr), name, rule }))

/** The range name of an IPv6 address: the extra table, then the library's, then the 2000::/3 check. */
export function rangeOfIPv6(address: ipaddr.IPv6): string {
  const own = address.range() as string
  if (own !== 'unicast') return own
  for (const extra of extras) if (address.match(extra.range)) return extra.name
  return address.match(GLOBAL_UNICAST) ? 'unicast' : 'outsideGlobalUnicast'
}

export function ruleOf(name: string): 'public' | string {
  if (name === 'outsideGlobalUnicast') return OUTSIDE_GLOBAL_UNICAST
  const extra = extras.find((e) => e.name === name)
  if (extra) return extra.rule
  return RANGE_RULES[name] ?? `special-purpose range ${name}`
}
