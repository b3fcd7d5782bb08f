import ipaddr from 'ipaddr.js'
import { type EmbeddingRange, rangeOfIPv6, ruleOf } from './ranges.ts'

/** How an address was judged. */
export interface AddressClass {
  /** The address as given, without brackets or zone. */
  address: string
  family: 4 | 6 | undefined
  /** `ipaddr.js`'s range name (`unicast`, `loopback`, `6to4`, ...), one of ours, or `invalid`. */
  range: string
  public: boolean
  /** Why it is not public, in words (`loopback`, `private (RFC 1918), as 10.0.0.1 inside a 6to4 address`). */
  reason?: string
  /** The IPv4 addresses an IPv6 form carries, each classified in its place. */
  embedded?: Array<{ role: string; address: string }>
}

const EMBEDDINGS: Record<EmbeddingRange, string> = {
  ipv4Mapped: 'an IPv4-mapped address',
  rfc6145: 'an IPv4-translated (SIIT) address',
  rfc6052: 'a NAT64 address',
  '6to4': 'a 6to4 address',
  teredo: 'a Teredo address',
  ipv4Compatible: 'an IPv4-compatible address',
}

const v4 = (bytes: number[], at: readonly number[], flip = 0) =>
  at.map((i) => ((bytes[i] as number) ^ flip) & 0xff).join('.')

/** Byte positions of the IPv4 address for each prefix length RFC 6052 allows in the local-use /48 (the u octet, byte 8, is skipped). */
const NAT64_LOCAL_POSITIONS: ReadonlyArray<[prefix: number, bytes: number[]]> = [
  [96, [12, 13, 14, 15]],
  [64, [9, 10, 11, 12]],
  [56, [7, 9, 10, 11]],
  [48, [6, 7, 9, 10]],
]
const LAST_32 = [12, 13, 14, 15]

/**
 * The IPv4 addresses an IPv6 address of an embedding range carries, by role.
 * The local-use NAT64 prefix (64:ff9b:1::/48) is subdivided by its operator
 * with any RFC 6052 prefix length, so every position that length could put
 * the IPv4 address at counts.
 */
function embeddedIPv4(range: EmbeddingRange, bytes: number[]): Array<{ role: string; address: string }> {
  switch (range) {
    case 'ipv4Mapped':
    case 'rfc6145':
    case 'ipv4Compatible':
      return [{ role: 'embedded', address: v4(bytes, LAST_32) }]
    case 'rfc6052': {
      const local = bytes[4] === 0 && bytes[5] === 1
      if (!local) return [{ role: 'embedded', address: v4(bytes, LAST_32) }]
      return NAT64_LOCAL_POSITIONS.map(([prefix, at]) => ({
        role: `embedded for a /${prefix} prefix`,
        address: v4(bytes, at),
      }))
    }
    case '6to4':
      return [{ role: 'embedded', address: v4(bytes, [2, 3, 4, 5]) }]
    case 'teredo':
      return [
        { role: 'Teredo server', address: v4(bytes, [4, 5, 6, 7]) },
        { role: 'Teredo client', address: v4(bytes, LAST_32, 0xff) },
      ]
  }
}

const isEmbedding = (range: string): range is EmbeddingRange => Object.hasOwn(EMBEDDINGS, range)

const DOTTED_TAIL = /^(.*:)(\d+\.\d+\.\d+\.\d+)$/

function parse(text: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  try {
    // ipaddr.js 2.5 reads `::a.b.c.d` as `::ffff:a.b.c.d`: spell a dotted tail as two hex groups first.
    const dotted = DOTTED_TAIL.exec(text)
    if (dotted && ipaddr.IPv4.isValidFourPartDecimal(dotted[2] as string)) {
      const [a = 0, b = 0, c = 0, d = 0] = ipaddr.IPv4.parse(dotted[2] as string).octets
      return ipaddr.IPv6.parse(`${dotted[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`)
    }
    return ipaddr.parse(text)
  } catch {
    return undefined
  }
}

/**
 * Classifies an IP address (IPv4, or IPv6 with or without brackets and
 * zone). The special-purpose ranges are `ipaddr.js`'s `range()` tables plus
 * the few in `ranges.ts`; an IPv6 form that carries an IPv4 address (mapped,
 * SIIT, NAT64 well-known and local-use, 6to4, Teredo server and client,
 * IPv4-compatible) is judged by the IPv4 address(es) it carries. Anything
 * that is not an IP address is not public.
 */
export function classifyAddress(input: string): AddressClass {
  const address = input
    .trim()
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/%.*$/, '')
  const parsed = parse(address)
  if (!parsed) return { address, family: undefined, range: 'invalid', public: false, reason: 'not an IP address' }
  if (parsed.kind() === 'ipv4') {
    const range = parsed.range() as string
    const rule = ruleOf(range)
    return rule === 'public'
      ? { address, family: 4, range, public: true }
      : { address, family: 4, range, public: false, reason: rule }
  }
  const range = rangeOfIPv6(parsed as ipaddr.IPv6)
  if (!isEmbedding(range)) {
    const rule = ruleOf(range)
    return rule === 'public'
      ? { address, family: 6, range, public: true }
      : { address, family: 6, range, public: false, reason: rule }
  }
  const embedded = embeddedIPv4(range, parsed.toByteArray())
  for (const inner of embedded) {
    const judged = classifyAddress(inner.address)
    if (!judged.public) {
      const role = inner.role === 'embedded' ? '' : ` (${inner.role})`
      return {
        address,
        family: 6,
        range,
        public: false,
        reason: `${judged.reason}, as ${inner.address}${role} inside ${EMBEDDINGS[range]}`,
        embedded,
      }
    }
  }
  // `::a.b.c.d` is deprecated and routed nowhere, whatever it carries.
  if (range === 'ipv4Compatible')
    return {
      address,
      family: 6,
      range,
      public: false,
      reason: 'IPv4-compatible (::/96, deprecated and not routed)',
      embedded,
    }
  return { address, family: 6, range, public: true, embedded }
}

/** True when `address` is an IP address on the public internet (see `classifyAddress`). */
export function isPublicAddress(address: string): boolean {
  return classifyAddress(address).public
}

/** Why `address` is not a public internet address, or undefined when it is one. */
export function nonPublicReason(address: string): string | undefined {
  return classifyAddress(address).reason
}
