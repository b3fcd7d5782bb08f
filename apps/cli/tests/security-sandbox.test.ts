import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer, type Server } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { reply } from '@dsh/llm-mock'
import { type HttpTestHost, startHttpTestHost } from '@dsh/testkit'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { liveWithMarker } from '../../../packages/shell/shell/tests/processes.ts'
import { toolTexts, useMockedHeadless } from './support/mocked-headless.ts'
import { sessionLogText } from './support/session-log.ts'

// Attacks a prompt-injected model would make, issued as bash calls through the
// real headless bin. CI runs as root, so every fence here holds for root.
const t = useMockedHeadless()

/** Runs one headless task whose model makes one bash call with `command`, and returns that call's result text. */
async function bash(command: string, args: string[] = []): Promise<{ text: string; code: number; stderr: string }> {
  t.mock.enqueue(
    reply.toolCalls([{ name: 'bash', arguments: { description: 'Run a command', command } }]),
    reply.text('done'),
  )
  const result = await t.headless([...args, 'attack'])
  return { text: toolTexts(t.mock.requests.at(-1))[0] ?? '', code: result.code ?? -1, stderr: result.stderr }
}

/** A folder outside the workspace, outside /tmp and outside dsh's home: the host the attacks aim at. */
let outside: string
beforeAll(async () => {
  outside = await mkdtemp(path.join(os.homedir(), '.dsh-security-test-'))
})
afterAll(async () => {
  await rm(outside, { recursive: true, force: true })
})

describe('sandbox confinement through the headless bin (as root)', () => {
  it('no capabilities, no_new_privs, seccomp; the remount attack fails under read-only and workspace-write', async () => {
    for (const preset of ['read-only', 'workspace-write']) {
      const { text } = await bash(
        `grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status; mount -o remount,bind,rw / && echo x > ${outside}/escaped; echo end`,
        ['--permission', preset],
      )
      expect(text).toMatch(/CapEff:\s+0000000000000000/)
      expect(text).toMatch(/NoNewPrivs:\s+1/)
      expect(text).toMatch(/Seccomp:\s+2/)
      expect(existsSync(path.join(outside, 'escaped'))).toBe(false)
    }
    // The legitimate twin: the workspace is writable.
    const { text } = await bash('echo made > inside.txt && cat inside.txt')
    expect(text).toContain('made')
    expect(readFileSync(path.join(t.work, 'inside.txt'), 'utf8')).toBe('made\n')
  })

  it('nested namespaces fail: unshare -m, unshare -U, a bwrap inside the sandbox', async () => {
    const { text } = await bash(
      'for c in "unshare -m true" "unshare -Ur true" "bwrap --ro-bind / / true"; do $c 2>/dev/null && echo "ESCAPED: $c" || echo "refused: $c"; done',
    )
    expect(text).not.toContain('ESCAPED')
    expect(text.match(/refused: /g)).toHaveLength(3)
  })

  it('a Unix socket server on the host (in $HOME and in /tmp) receives no connection', async () => {
    const servers: Server[] = []
    const connected: string[] = []
    const tmpFolder = await mkdtemp(path.join(os.tmpdir(), 'dsh-security-sock-'))
    const places = [path.join(outside, 'agent.sock'), path.join(tmpFolder, 'tmux.sock')]
    try {
      for (const place of places) {
        const server = createServer((socket) => {
          connected.push(place)
          socket.end('pwned\n')
        })
        await new Promise<void>((resolve) => server.listen(place, resolve))
        servers.push(server)
      }
      const script = places
        .map(
          (place) =>
            `python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect("${place}"); print(s.recv(5))'`,
        )
        .join('; ')
      const { text } = await bash(`${script}; echo end`)
      expect(text).not.toContain('pwned')
      expect(text).toMatch(/Operation not permitted|No such file/)
      expect(connected).toEqual([])
      // The legitimate twin: socketpair (pipes between processes) still works.
      const pair = await bash(
        `python3 -c 'import socket; a, b = socket.socketpair(); a.send(b"ok"); print(b.recv(2).decode())'`,
      )
      expect(pair.text).toMatch(/^ok$/m)
    } finally {
      for (const server of servers) server.close()
      await rm(tmpFolder, { recursive: true, force: true })
    }
  })

  it('.git, .git/hooks and the other protected paths cannot be created in a workspace without them', async () => {
    const { text } = await bash(
      'mkdir -p .git/hooks && echo "touch /tmp/pwned" > .git/hooks/post-checkout; mkdir -p .claude .dsh .codex .agents; echo {} > .mcp.json; echo legit > legit.txt; echo end',
    )
    expect(text).toContain('end')
    for (const name of ['.git', '.claude', '.dsh', '.codex', '.agents', '.mcp.json'])
      expect(existsSync(path.join(t.work, name)), name).toBe(false)
    expect(readFileSync(path.join(t.work, 'legit.txt'), 'utf8')).toBe('legit\n')
  })

  it("a private /tmp: what a command writes to /tmp never reaches the host's; TMPDIR is the session's own folder", async () => {
    const marker = `dsh-security-tmp-${process.pid}-${Date.now()}`
    const { text } = await bash(`echo x > /tmp/${marker}; echo "tmpdir=$TMPDIR"; ls -ld "$TMPDIR" | cut -c1-10`)
    expect(existsSync(path.join('/tmp', marker))).toBe(false)
    const tmpdir = /tmpdir=(\S+)/.exec(text)?.[1] ?? ''
    expect(tmpdir).toMatch(/dsh-session-tmp-/)
    expect(text).toContain('drwx------')
  })

  it("dsh's home is hidden: the credentials file cannot be read from bash, and DSH_HOME is not exported", async () => {
    mkdirSync(t.home, { recursive: true })
    writeFileSync(path.join(t.home, '.credentials.yaml'), 'DEEPSEEK_API_KEY: sk-test-key\n', { mode: 0o600 })
    const { text } = await bash(`cat ${t.home}/.credentials.yaml; ls -A ${t.home}; echo "home=$DSH_HOME"; echo end`)
    expect(text).not.toContain('sk-test-key')
    expect(text).not.toContain('sessions')
    expect(text).toContain('home=\n')
  })

  it('nothing a command starts survives the session, nohup setsid included, also under danger-full-access', async () => {
    for (const preset of ['workspace-write', 'danger-full-access']) {
      const tag = `dsh-security-survivor-${process.pid}-${preset}`
      const { code, text } = await bash(
        `nohup setsid bash -c 'exec -a ${tag} sleep 1000' >/dev/null 2>&1 & echo started`,
        ['--permission', preset],
      )
      expect(code).toBe(0)
      expect(text).toContain('started')
      expect(await liveWithMarker(tag)).toEqual([])
    }
    // The legitimate twin: a background job runs while the session does.
    t.mock.enqueue(
      reply.toolCalls([
        {
          name: 'bash',
          arguments: {
            description: 'Run a command',
            command: 'echo job-ran > job.txt; sleep 0.2',
            run_in_background: true,
          },
        },
      ]),
      (request) => {
        const id = /started background job (\S+):/.exec(toolTexts(request).at(-1) ?? '')?.[1] ?? 'missing'
        return reply.toolCalls([{ name: 'job_output', arguments: { job_id: id, wait: true, timeout_ms: 5000 } }])
      },
      reply.text('done'),
    )
    expect((await t.headless(['job'])).code).toBe(0)
    expect(readFileSync(path.join(t.work, 'job.txt'), 'utf8')).toBe('job-ran\n')
  })
})

describe('the network settings through the headless bin', () => {
  // The test host: a loopback alias the proxy is told to treat as public, reached by name.
  const TEST_HOST = '127.0.0.2'
  let testHost: HttpTestHost
  // A service on the host's own loopback (the dsh web server, a database): nothing sandboxed may reach it.
  let loopback: HttpTestHost

  beforeAll(async () => {
    testHost = await startHttpTestHost(TEST_HOST, 'registry-answer')
    loopback = await startHttpTestHost('127.0.0.1', 'loopback-secret')
  })
  afterAll(async () => {
    await testHost.close()
    await loopback.close()
  })

  /** The home patch: the test host is a registry on the allowlist; other.test is not; loopback.test is the host. */
  function configureProxy(): void {
    mkdirSync(t.home, { recursive: true })
    writeFileSync(
      path.join(t.home, 'cordis.patch.yml'),
      [
        '- id: sandbox-network',
        '  config:',
        '    allowedHosts: [registry.test, loopback.test]',
        `    staticHosts: { registry.test: '${TEST_HOST}', other.test: '${TEST_HOST}', loopback.test: '127.0.0.1' }`,
        `    publicRanges: ['${TEST_HOST}/32']`,
        '',
      ].join('\n'),
    )
  }

  const curl = (url: string, extra = '') => `curl -sS --max-time 10 ${extra} ${url}; echo " [exit $?]"`

  it('no setting reaches a loopback service of the host', async () => {
    configureProxy()
    for (const network of ['off', 'proxy', 'on']) {
      const { text } = await bash(
        `${curl(`http://127.0.0.1:${loopback.port}/`, '--noproxy "*" --connect-timeout 3')}; ${curl(`http://127.0.0.1:${loopback.port}/`, '--connect-timeout 3')}; ` +
          `${curl(`http://loopback.test:${loopback.port}/`)}; ${curl(`http://10.0.2.2:${loopback.port}/`, '--noproxy "*" --connect-timeout 3')}`,
        ['--network', network],
      )
      expect(text, network).not.toContain('loopback-secret')
      // All four attempts ran (the command was not refused as a whole).
      expect(text.match(/\[exit \d+\]/g), network).toHaveLength(4)
    }
    expect(loopback.hits).toEqual([])
  })

  it('proxy: an allowlisted host passes, another is denied in headless, a name that resolves to loopback is refused; all logged', async () => {
    configureProxy()
    testHost.hits.length = 0
    t.mock.enqueue(
      reply.toolCalls([
        {
          name: 'bash',
          arguments: {
            description: 'Run a command',
            command: `${curl(`http://registry.test:${testHost.port}/pkg`)}; ${curl(`http://other.test:${testHost.port}/x`)}; ${curl(`http://loopback.test:${loopback.port}/`)}`,
          },
        },
      ]),
      reply.text('done'),
    )
    const result = await t.headless(['--json', 'fetch things'])
    expect(result.code).toBe(0)
    const text = toolTexts(t.mock.requests.at(-1))[0] ?? ''
    expect(text).toContain('registry-answer [exit 0]')
    expect(text).toContain('other.test is not on the allowlist, and no one can be asked here')
    expect(text).toMatch(/loopback\.test: it resolves to 127\.0\.0\.1/)
    expect(testHost.hits).toEqual([`registry.test:${testHost.port}/pkg`])
    const sessionId = /"sessionId":"([^"]+)"/.exec(result.stdout)?.[1] ?? ''
    const log = await sessionLogText(t.home, sessionId)
    const decisions = log
      .split('\n')
      .filter((line) => line.includes('"network/decision"'))
      .map((line) => JSON.parse(line).data)
    expect(decisions).toEqual([
      expect.objectContaining({ host: 'registry.test', decision: 'allow', by: 'allowlist' }),
      expect.objectContaining({ host: 'other.test', decision: 'deny', by: 'policy' }),
      expect.objectContaining({ host: 'loopback.test', decision: 'deny', by: 'address' }),
    ])
    expect(decisions[0].callId).toMatch(/./)
  })

  it('off: no network at all, not even to an allowlisted host', async () => {
    configureProxy()
    testHost.hits.length = 0
    const { text } = await bash(curl(`http://registry.test:${testHost.port}/pkg`, '--connect-timeout 3'), [
      '--network',
      'off',
    ])
    expect(text).not.toContain('registry-answer')
    expect(testHost.hits).toEqual([])
    expect(readdirSync(t.work)).toEqual([])
  })
})
