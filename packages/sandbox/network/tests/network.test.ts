import { execFile } from 'node:child_process'
import { mkdtemp, realpath, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from '@dsh/cordis'
import * as sandboxPlugin from '@dsh/sandbox'
import type { BwrapSandboxConfig, NetworkDecision, NetworkTarget, SandboxPolicy } from '@dsh/sandbox'
import { type HttpTestHost, startHttpTestHost } from '@dsh/testkit'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import * as networkPlugin from '../src/index.ts'
import type { SandboxNetworkConfig } from '../src/index.ts'

// The test host: a loopback alias the proxy is told to treat as public, reached by name.
const TEST_HOST = '127.0.0.2'
let testHost: HttpTestHost
// A service on the host's own loopback, which no sandboxed command may reach.
let loopback: HttpTestHost

let root: Context
let workspace: string

beforeAll(async () => {
  testHost = await startHttpTestHost(TEST_HOST, 'hello from the test host')
  loopback = await startHttpTestHost('127.0.0.1', 'loopback service')
})

afterAll(async () => {
  await testHost.close()
  await loopback.close()
})

beforeEach(async () => {
  root = new Context()
  workspace = await realpath(await mkdtemp(join(tmpdir(), 'dsh-network-ws-')))
  testHost.hits.length = 0
  loopback.hits.length = 0
})

afterEach(async () => {
  await root.fiber.dispose()
  await rm(workspace, { recursive: true, force: true })
})

async function boot(config: Partial<SandboxNetworkConfig> = {}) {
  await root.plugin(sandboxPlugin, {} as BwrapSandboxConfig)
  await root.plugin(networkPlugin, {
    allowedHosts: ['registry.test', '*.allowed.test', 'localhost.test'],
    staticHosts: {
      'registry.test': TEST_HOST,
      'other.test': TEST_HOST,
      'deep.allowed.test': TEST_HOST,
      'localhost.test': '127.0.0.1',
    },
    publicRanges: [`${TEST_HOST}/32`],
    ...config,
  } as SandboxNetworkConfig)
}

function policy(overrides: Partial<SandboxPolicy> = {}): SandboxPolicy {
  return { mode: 'workspace-write', writableRoots: [workspace], protectedPaths: [], network: 'off', ...overrides }
}

async function run(script: string, rules: SandboxPolicy): Promise<{ code: number; stdout: string; stderr: string }> {
  const wrapped = await root.sandbox.wrap(['bash', '-c', script], rules, workspace)
  if (!('argv' in wrapped)) throw new Error(`refused: ${wrapped.refused}`)
  const [program, ...args] = wrapped.argv
  const ran = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(program!, args, { cwd: workspace, encoding: 'utf8' }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr })
    })
  })
  await wrapped.release?.()
  return ran
}

interface Granted {
  policy: SandboxPolicy
  decisions: NetworkDecision[]
  asked: NetworkTarget[]
}

function proxied(answer?: boolean): Granted {
  const decisions: NetworkDecision[] = []
  const asked: NetworkTarget[] = []
  const token = root.sandboxNetwork.grant({
    sessionId: 'session-test',
    record: (decision) => decisions.push(decision),
    ...(answer === undefined
      ? {}
      : {
          ask: async (target: NetworkTarget) => {
            asked.push(target)
            return answer
          },
        }),
  })
  return { policy: policy({ network: 'proxy', proxyToken: token }), decisions, asked }
}

const curl = (url: string, extra = '') => `curl -sS --max-time 10 ${extra} ${url}; echo " [exit $?]"`

describe('network proxy', () => {
  it('lets an allowlisted name through, plain and tunnelled, and logs it once', async () => {
    await boot()
    const { policy: rules, decisions } = proxied()
    const plain = await run(curl(`http://registry.test:${testHost.port}/pkg`), rules)
    expect(plain.stdout).toBe('hello from the test host [exit 0]\n')
    const tunnel = await run(curl(`http://deep.allowed.test:${testHost.port}/tunnel`, '--proxytunnel'), rules)
    expect(tunnel.stdout).toBe('hello from the test host [exit 0]\n')
    expect(testHost.hits).toEqual([`registry.test:${testHost.port}/pkg`, `deep.allowed.test:${testHost.port}/tunnel`])
    expect(decisions).toEqual([
      { host: 'registry.test', port: testHost.port, decision: 'allow', by: 'allowlist' },
      { host: 'deep.allowed.test', port: testHost.port, decision: 'allow', by: 'allowlist' },
    ])
  })

  it('denies a host off the allowlist where nobody can be asked; asks where someone can', async () => {
    await boot()
    const headless = proxied()
    const denied = await run(curl(`http://other.test:${testHost.port}/x`), headless.policy)
    expect(denied.stdout).toContain('not on the allowlist, and no one can be asked here')
    const deniedTunnel = await run(curl(`http://other.test:${testHost.port}/x`, '--proxytunnel'), headless.policy)
    expect(deniedTunnel.stdout).not.toContain('hello')
    expect(testHost.hits).toEqual([])
    expect(headless.decisions).toEqual([
      expect.objectContaining({ host: 'other.test', decision: 'deny', by: 'policy' }),
    ])

    const refused = proxied(false)
    expect((await run(curl(`http://other.test:${testHost.port}/x`), refused.policy)).stdout).toContain(
      'the user did not allow it',
    )
    expect(refused.asked).toEqual([{ host: 'other.test', port: testHost.port }])

    const allowed = proxied(true)
    const ok = await run(
      `${curl(`http://other.test:${testHost.port}/a`)}; ${curl(`http://other.test:${testHost.port}/b`)}`,
      allowed.policy,
    )
    expect(ok.stdout).toBe('hello from the test host [exit 0]\nhello from the test host [exit 0]\n')
    expect(testHost.hits).toEqual([`other.test:${testHost.port}/a`, `other.test:${testHost.port}/b`])
    // Asked once for the command, not per request.
    expect(allowed.asked).toHaveLength(1)
    expect(allowed.decisions).toEqual([{ host: 'other.test', port: testHost.port, decision: 'allow', by: 'user' }])
  })

  it('refuses names and addresses on the host loopback, allowlisted or not, and cannot be bypassed', async () => {
    await boot()
    const { policy: rules, decisions } = proxied(true)
    const byName = await run(curl(`http://localhost.test:${loopback.port}/`), rules)
    expect(byName.stdout).toMatch(/resolves to 127\.0\.0\.1, .*loopback/)
    const byAddress = await run(curl(`http://127.0.0.1:${loopback.port}/`, '--proxytunnel'), rules)
    expect(byAddress.stdout).not.toContain('loopback service')
    // Without the proxy: the namespace has no route to the host at all.
    const direct = await run(curl(`http://127.0.0.1:${loopback.port}/`, '--noproxy "*"'), rules)
    expect(direct.stdout).not.toContain('loopback service')
    expect(loopback.hits).toEqual([])
    expect(decisions.filter((d) => d.decision === 'allow')).toEqual([])
    expect(decisions).toEqual(
      expect.arrayContaining([expect.objectContaining({ host: 'localhost.test', decision: 'deny', by: 'address' })]),
    )
  })

  it('refuses a command whose token it does not know', async () => {
    await boot()
    const result = await run(
      curl(`http://registry.test:${testHost.port}/`),
      policy({ network: 'proxy', proxyToken: 'made-up' }),
    )
    expect(result.stdout).not.toContain('hello')
    expect(testHost.hits).toEqual([])
  })

  it('fails at load on an allowlist entry that is not a domain, a bad range or a bad static address', async () => {
    for (const [config, message] of [
      [
        { extraAllowedHosts: ['ok.test', 'http://x.test/'] },
        /extraAllowedHosts\[1\]: "http:\/\/x.test\/" is not a domain name/,
      ],
      [{ allowedHosts: ['10.0.0.1'] }, /allowedHosts\[0\]: "10.0.0.1" is not a domain name/],
      [{ publicRanges: ['10.0.0.0'] }, /publicRanges\[0\]: "10.0.0.0" is not a CIDR range/],
      [{ staticHosts: { 'a.test': 'nope' } }, /staticHosts.a.test: "nope" is not an IP address/],
    ] as const) {
      expect(() => new networkPlugin.LocalSandboxNetwork(new Context(), networkPlugin.Config(config as never))).toThrow(
        message,
      )
    }
  })
})

describe('network on', () => {
  it('never reaches the host loopback', async () => {
    await boot()
    const result = await run(
      curl(`http://10.0.2.2:${loopback.port}/`, '--connect-timeout 3'),
      policy({ network: 'on' }),
    )
    expect(result.stdout).not.toContain('loopback service')
    const direct = await run(
      curl(`http://127.0.0.1:${loopback.port}/`, '--connect-timeout 3'),
      policy({ network: 'on' }),
    )
    expect(direct.stdout).not.toContain('loopback service')
    expect(loopback.hits).toEqual([])
  })
})
