import { describe, expect, it } from 'vitest'
import { HttpError } from '../src/http.ts'
import { checkTrust, isLoopback, parseAuthority, trustPolicy } from '../src/trust.ts'

const loopback = trustPolicy({ host: '127.0.0.1', port: 3080, trustedHosts: [] })

function refusal(run: () => void): { status: number; code: string; message: string } | undefined {
  try {
    run()
    return undefined
  } catch (error) {
    if (!(error instanceof HttpError)) throw error
    return { status: error.status, code: error.code, message: error.message }
  }
}

describe('Host', () => {
  it.each(['127.0.0.1:3080', 'localhost:3080', 'LOCALHOST:3080', '[::1]:3080'])(
    'accepts the loopback authority %s',
    (host) => {
      expect(refusal(() => checkTrust(loopback, { host }))).toBeUndefined()
    },
  )

  it.each([
    ['evil.com:3080', 'DNS rebinding: a foreign name resolving to 127.0.0.1'],
    ['127.0.0.1:3081', 'another port'],
    ['127.0.0.1', 'no port (means 80)'],
    ['localhost.evil.com:3080', 'a look-alike name'],
    ['127.0.0.1:3080@evil.com', 'userinfo tricks'],
    ['', 'empty'],
  ])('refuses %s (%s) with 403 bad-host', (host) => {
    expect(refusal(() => checkTrust(loopback, { host }))).toMatchObject({ status: 403, code: 'bad-host' })
  })

  it('refuses a request without Host, saying so', () => {
    expect(refusal(() => checkTrust(loopback, {}))?.message).toContain('(missing)')
  })

  it('accepts trusted hosts: host:port exactly, a bare host on any port', () => {
    const policy = trustPolicy({ host: '127.0.0.1', port: 3080, trustedHosts: ['box.lan:8443', 'dev.local'] })
    expect(refusal(() => checkTrust(policy, { host: 'box.lan:8443' }))).toBeUndefined()
    expect(refusal(() => checkTrust(policy, { host: 'box.lan:3080' }))?.code).toBe('bad-host')
    expect(refusal(() => checkTrust(policy, { host: 'dev.local:1234' }))).toBeUndefined()
    expect(refusal(() => checkTrust(policy, { host: 'Dev.Local:3080' }))).toBeUndefined()
  })

  it('rejects a malformed trusted host at startup, naming it', () => {
    expect(() => trustPolicy({ host: '127.0.0.1', port: 1, trustedHosts: ['http://x.lan/'] })).toThrow(
      'trusted host "http://x.lan/"',
    )
  })

  it('accepts the bound address, and every interface address when bound to all of them', () => {
    const bound = trustPolicy({ host: '192.168.7.9', port: 80, trustedHosts: [] })
    expect(refusal(() => checkTrust(bound, { host: '192.168.7.9' }))).toBeUndefined()
    const all = trustPolicy({ host: '0.0.0.0', port: 3080, trustedHosts: [] })
    expect(all.authorities.has('127.0.0.1:3080')).toBe(true)
    expect(all.authorities.has('0.0.0.0:3080')).toBe(false)
  })
})

describe('Origin', () => {
  it('accepts no Origin, and the same origin', () => {
    expect(
      refusal(() => checkTrust(loopback, { host: '127.0.0.1:3080', origin: 'http://127.0.0.1:3080' })),
    ).toBeUndefined()
  })

  it.each(['http://evil.com', 'http://localhost:3080', 'https://127.0.0.1:3080', 'null'])(
    'refuses Origin %s with 403 bad-origin',
    (origin) => {
      expect(refusal(() => checkTrust(loopback, { host: '127.0.0.1:3080', origin }))).toMatchObject({
        status: 403,
        code: 'bad-origin',
      })
    },
  )

  it('refuses Sec-Fetch-Site: cross-site', () => {
    expect(refusal(() => checkTrust(loopback, { host: '127.0.0.1:3080', 'sec-fetch-site': 'cross-site' }))?.code).toBe(
      'bad-origin',
    )
  })
})

describe('token', () => {
  const guarded = trustPolicy({ host: '0.0.0.0', port: 3080, trustedHosts: [], token: 's3cret-token' })
  const host = '127.0.0.1:3080'

  it('needs the bearer token or the socket query token', () => {
    expect(refusal(() => checkTrust(guarded, { host }))).toMatchObject({ status: 401, code: 'unauthorized' })
    expect(refusal(() => checkTrust(guarded, { host, authorization: 'Bearer wrong-token!' }))).toMatchObject({
      status: 401,
      code: 'unauthorized',
    })
    expect(refusal(() => checkTrust(guarded, { host, authorization: 'Bearer s3cret-token' }))).toBeUndefined()
    expect(refusal(() => checkTrust(guarded, { host }, 's3cret-token'))).toBeUndefined()
    expect(refusal(() => checkTrust(guarded, { host }, 's3cret'))?.code).toBe('unauthorized')
  })

  it('checks Host before the token', () => {
    expect(
      refusal(() => checkTrust(guarded, { host: 'evil.com:3080', authorization: 'Bearer s3cret-token' }))?.code,
    ).toBe('bad-host')
  })
})

describe('helpers', () => {
  it('tells loopback binds from others', () => {
    expect(['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]'].map(isLoopback)).toEqual([
      true,
      true,
      true,
      true,
      true,
    ])
    expect(['0.0.0.0', '::', '192.168.1.4', 'example.com'].map(isLoopback)).toEqual([false, false, false, false])
  })

  it('parses authorities strictly', () => {
    expect(parseAuthority('Example.com:80')).toEqual({ host: 'example.com', port: 80 })
    expect(parseAuthority('[::1]:3080')).toEqual({ host: '[::1]', port: 3080 })
    expect(parseAuthority('[zz]:1')).toBeUndefined()
    expect(parseAuthority('a:99999')).toBeUndefined()
    expect(parseAuthority('a/b')).toBeUndefined()
  })
})
