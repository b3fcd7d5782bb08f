import { execFile } from 'node:child_process'
import { mkdtemp, realpath, rm } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from '@dsh/cordis'
import * as sandboxPlugin from '@dsh/sandbox'
import type { BwrapSandboxConfig, NetworkDecision, NetworkTarget, SandboxPolicy } from '@dsh/sandbox'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import * as networkPlugin from '../src/index.ts'
import type { SandboxNetworkConfig } from '../src/index.ts'

// The test host: a loopback alias the proxy is told to treat as public, reached by name.
const TEST_HOST = '127.0.0.2'
let testHost: Server
let hostPort: number
let hostRequests: string[] = []
// A service on the host's own loopback, which no sandboxed command may reach.
let loopback: Server
let loopbackPort: number
let loopbackRequests = 0

let root: Context
let workspace: string

beforeAll(async () => {
  testHost = createServer((request, response) => {
    hostRequests.push(`${request.headers.host} ${request.url}`)
    response.end(`hello from the test host: ${request.url}`)
  })
  await new Promise<void>((resolve) => testHost.listen(0, TEST_HOST, resolve))
  hostPort = (testHost.address() as { port: number }).port
  loopback = createServer((_request, response) => {
    loopbackRequests += 1
    response.end('loopback service')
  })
  await new Promise<void>((resolve) => loopback.listen(0, '127.0.0.1', resolve))
  loopbackPort = (loopback.address() as { port: number }).port
})

afterAll(async () => {
  testHost.close()
  loopback.close()
})

beforeEach(async () => {
  root = new Context()
  workspace = await realpath(await mkdtemp(join(tmpdir(), 'dsh-network-ws-')))
  hostRequests = []
  loopbackRequests = 0
})

afterEach(async () => {
  await root.fiber.dispose()
  await rm(workspace, { recursive: true, force: true })
})

async function boot(config: Partial<SandboxNetworkConfig> = {}) {
  await root.plugin(sandboxPlugin, {} as BwrapSandboxConfig)
  await root.plugin(networkPlugin, {
    allowedHosts: ['registry.test', '*.allowed.test', 'localhost.test'],
    staticHosts: { 'registry.test': TEST_HOST, 'other.test': TEST_HOST, 'deep.allowed.test': TEST_HOST, 'localhost.test': '127.0.0.1' },
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
    const plain = await run(curl(`http://registry.test:${hostPort}/pkg`), rules)
    expect(plain.stdout).toBe('hello from the test host: /pkg [exit 0]\n')
    const tunnel = await run(curl(`http://deep.allowed.test:${hostPort}/tunnel`, '--proxytunnel'), rules)
    expect(tunnel.stdout).toBe('hello from the test host: /tunnel [exit 0]\n')
    expect(hostRequests).toEqual([`registry.test:${hostPort} /pkg`, `deep.allowed.test:${hostPort} /tunnel`])
    expect(decisions).toEqual([
      { host: 'registry.test', port: hostPort, decision: 'allow', by: 'allowlist' },
      { host: 'deep.allowed.test', port: hostPort, decision: 'allow', by: 'allowlist' },
    ])
  })

  it('denies a host off the allowlist where nobody can be asked; asks where someone can', async () => {
    await boot()
    const headless = proxied()
    const denied = await run(curl(`http://other.test:${hostPort}/x`), headless.policy)
    expect(denied.stdout).toContain('not on the allowlist, and no one can be asked here')
    const deniedTunnel = await run(curl(`http://other.test:${hostPort}/x`, '--proxytunnel'), headless.policy)
    expect(deniedTunnel.stdout).not.toContain('hello')
    expect(hostRequests).toEqual([])
    expect(headless.decisions).toEqual([expect.objectContaining({ host: 'other.test', decision: 'deny', by: 'policy' })])

    const refused = proxied(false)
    expect((await run(curl(`http://other.test:${hostPort}/x`), refused.policy)).stdout).toContain('the user did not allow it')
    expect(refused.asked).toEqual([{ host: 'other.test', port: hostPort }])

    const allowed = proxied(true)
    const ok = await run(`${curl(`http://other.test:${hostPort}/a`)}; ${curl(`http://other.test:${hostPort}/b`)}`, allowed.policy)
    expect(ok.stdout).toBe('hello from the test host: /a [exit 0]\nhello from the test host: /b [exit 0]\n')
    // Asked once for the command, not per request.
    expect(allowed.asked).toHaveLength(1)
    expect(allowed.decisions).toEqual([{ host: 'other.test', port: hostPort, decision: 'allow', by: 'user' }])
  })

  it('refuses names and addresses on the host loopback, allowlisted or not, and cannot be bypassed', async () => {
    await boot()
    const { policy: rules, decisions } = proxied(true)
    const byName = await run(curl(`http://localhost.test:${loopbackPort}/`), rules)
    expect(byName.stdout).toMatch(/resolves to 127\.0\.0\.1, .*loopback/)
    const byAddress = await run(curl(`http://127.0.0.1:${loopbackPort}/`, '--proxytunnel'), rules)
    expect(byAddress.stdout).not.toContain('loopback service')
    // Without the proxy: the namespace has no route to the host at all.
    const direct = await run(curl(`http://127.0.0.1:${loopbackPort}/`, '--noproxy "*"'), rules)
    expect(direct.stdout).not.toContain('loopback service')
    expect(loopbackRequests).toBe(0)
    expect(decisions.filter((d) => d.decision === 'allow')).toEqual([])
    expect(decisions).toEqual(expect.arrayContaining([expect.objectContaining({ host: 'localhost.test', decision: 'deny', by: 'address' })]))
  })

  it('refuses a command whose token it does not know', async () => {
    await boot()
    const result = await run(curl(`http://registry.test:${hostPort}/`), policy({ network: 'proxy', proxyToken: 'made-up' }))
    expect(result.stdout).not.toContain('hello')
    expect(hostRequests).toEqual([])
  })

  it('fails at load on an allowlist entry that is not a domain, a bad range or a bad static address', async () => {
    for (const [config, message] of [
      [{ extraAllowedHosts: ['ok.test', 'http://x.test/'] }, /extraAllowedHosts\[1\]: "http:\/\/x.test\/" is not a domain name/],
      [{ allowedHosts: ['10.0.0.1'] }, /allowedHosts\[0\]: "10.0.0.1" is not a domain name/],
      [{ publicRanges: ['10.0.0.0'] }, /publicRanges\[0\]: "10.0.0.0" is not a CIDR range/],
      [{ staticHosts: { 'a.test': 'nope' } }, /staticHosts.a.test: "nope" is not an IP address/],
    ] as const) {
      expect(() => new networkPlugin.LocalSandboxNetwork(new Context(), networkPlugin.Config(config as never))).toThrow(message)
    }
  })
})

describe('network on', () => {
  it('never reaches the host loopback', async () => {
    await boot()
    const result = await run(curl(`http://10.0.2.2:${loopbackPort}/`, '--connect-timeout 3'), policy({ network: 'on' }))
    expect(result.stdout).not.toContain('loopback service')
    const direct = await run(curl(`http://127.0.0.1:${loopbackPort}/`, '--connect-timeout 3'), policy({ network: 'on' }))
    expect(direct.stdout).not.toContain('loopback service')
    expect(loopbackRequests).toBe(0)
  })
})
