import { describe, expect, it } from 'vitest'
import { classifyAddress, isPublicAddress, nonPublicReason } from '../src/index.ts'

describe('classifyAddress', () => {
  it.each([
    // IPv4 special-purpose registry
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['10.1.2.3', 'private'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['100.127.255.255', 'carrier-grade NAT'],
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['169.254.169.254', 'link-local'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.0.0.8', 'reserved'],
    ['192.0.2.10', 'reserved'],
    ['192.168.1.1', 'private'],
    ['198.18.0.1', 'reserved'],
    ['198.19.255.255', 'reserved'],
    ['198.51.100.7', 'reserved'],
    ['203.0.113.9', 'reserved'],
    ['224.0.0.251', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'broadcast'],
    // Loose IPv4 spellings are read as the address they stand for.
    ['2130706433', 'loopback'],
    ['0x7f.1', 'loopback'],
    // IPv6 special-purpose registry
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['[::1]', 'loopback'],
    ['fe80::1%eth0', 'link-local'],
    ['fc00::1', 'unique local'],
    ['fd12:3456::1', 'unique local'],
    ['fec0::1', 'site-local'],
    ['ff02::1', 'multicast'],
    ['100::1', 'discard-only'],
    ['100:0:0:1::5', 'dummy prefix'],
    ['2001:db8::1', 'reserved'],
    ['3fff::1', 'reserved'],
    ['2001:2::1', 'benchmarking'],
    ['2001:10::1', 'ORCHID'],
    ['2001:20::1', 'ORCHIDv2'],
    ['2001:30::1', 'DRIP'],
    ['2001:1::1', 'reserved'],
    ['5f00::1', 'SRv6'],
    ['4000::1', 'outside the global unicast space'],
    ['64:ff9b:0:1::1', 'outside the global unicast space'],
    ['not-an-address', 'not an IP address'],
    ['', 'not an IP address'],
  ])('%s is not public: %s', (address, reason) => {
    const judged = classifyAddress(address)
    expect(judged.public).toBe(false)
    expect(judged.reason).toContain(reason)
    expect(isPublicAddress(address)).toBe(false)
  })

  it.each([
    // IPv4-mapped, SIIT, NAT64 well-known and local-use, 6to4, Teredo, IPv4-compatible
    ['::ffff:127.0.0.1', 'loopback, as 127.0.0.1 inside an IPv4-mapped address'],
    ['::ffff:7f00:1', 'loopback, as 127.0.0.1 inside an IPv4-mapped address'],
    ['::ffff:169.254.169.254', 'link-local'],
    ['::ffff:0:127.0.0.1', 'loopback, as 127.0.0.1 inside an IPv4-translated (SIIT) address'],
    ['::ffff:0:a00:1', 'private (RFC 1918), as 10.0.0.1 inside an IPv4-translated (SIIT) address'],
    ['64:ff9b::a00:1', 'private (RFC 1918), as 10.0.0.1 inside a NAT64 address'],
    ['64:ff9b::127.0.0.1', 'loopback'],
    ['64:ff9b:1::7f00:1', 'loopback, as 127.0.0.1 (embedded for a /96 prefix) inside a NAT64 address'],
    ['2002:7f00:1::', 'loopback, as 127.0.0.1 inside a 6to4 address'],
    ['2002:c0a8:101::1', 'private (RFC 1918), as 192.168.1.1 inside a 6to4 address'],
    ['2002:a9fe:a9fe::', 'link-local'],
    // Teredo: server 65.54.227.120 (public), client 0x80fffffe ^ 0xffffffff = 127.0.0.1
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'loopback, as 127.0.0.1 (Teredo client) inside a Teredo address'],
    // Teredo whose server is private
    ['2001:0:a00:1:8000:63bf:f7f7:f7f7', 'private (RFC 1918), as 10.0.0.1 (Teredo server)'],
    ['::127.0.0.1', 'loopback, as 127.0.0.1 inside an IPv4-compatible address'],
    ['::8.8.8.8', 'IPv4-compatible (::/96, deprecated and not routed)'],
  ])('%s is judged by the IPv4 address it carries: %s', (address, reason) => {
    const judged = classifyAddress(address)
    expect(judged).toMatchObject({ family: 6, public: false })
    expect(judged.reason).toContain(reason)
  })

  it.each([
    ['8.8.8.8', 'unicast'],
    ['1.1.1.1', 'unicast'],
    ['93.184.216.34', 'unicast'],
    ['192.175.48.1', 'as112'],
    ['192.52.193.1', 'amt'],
    ['2606:4700::1111', 'unicast'],
    ['2a00:1450:4001:80b::200e', 'unicast'],
    ['[2606:4700:4700::1111]', 'unicast'],
    ['::ffff:8.8.8.8', 'ipv4Mapped'],
    ['::ffff:0:8.8.8.8', 'rfc6145'],
    ['64:ff9b::808:808', 'rfc6052'],
    ['2002:808:808::1', '6to4'],
    // Teredo: server 65.54.227.120, client 0xf7f7f7f7 ^ 0xffffffff = 8.8.8.8
    ['2001:0:4136:e378:8000:63bf:f7f7:f7f7', 'teredo'],
    ['2001:4:112::1', 'as112v6'],
  ])('%s stays public (%s)', (address, range) => {
    expect(classifyAddress(address)).toMatchObject({ public: true, range })
    expect(isPublicAddress(address)).toBe(true)
    expect(nonPublicReason(address)).toBeUndefined()
  })

  it('reads a local-use NAT64 address at every position its operator’s prefix length could put the IPv4 address', () => {
    // 127.0.0.1 where a /48 prefix carries it (bytes 6-7 and 9-10, around the u octet).
    const judged = classifyAddress('64:ff9b:1:7f00:0:100::')
    expect(judged).toMatchObject({ public: false, range: 'rfc6052' })
    expect(judged.embedded).toContainEqual({ role: 'embedded for a /48 prefix', address: '127.0.0.1' })
    // Public only when every position holds a public address: 8.8.8.8 for /96, /64, /56 and /48 alike.
    expect(classifyAddress('64:ff9b:1:808:8:808:808:808')).toMatchObject({ public: true, range: 'rfc6052' })
  })

  it('lists the IPv4 addresses a form carries', () => {
    expect(classifyAddress('2001:0:4136:e378:8000:63bf:f7f7:f7f7').embedded).toEqual([
      { role: 'Teredo server', address: '65.54.227.120' },
      { role: 'Teredo client', address: '8.8.8.8' },
    ])
    expect(classifyAddress('2002:808:808::1').embedded).toEqual([{ role: 'embedded', address: '8.8.8.8' }])
  })
})
