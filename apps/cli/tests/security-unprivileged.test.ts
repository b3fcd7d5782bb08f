import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer, type Server } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { reply } from '@dsh/llm-mock'
import { type HttpTestHost, runDsh, startHttpTestHost } from '@dsh/testkit'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { liveWithMarker } from '../../../packages/shell/shell/tests/processes.ts'
import { toolTexts, useMockedHeadless } from './support/mocked-headless.ts'

// The same attacks as security-sandbox.test.ts, with dsh run as an ordinary
// user (nobody) instead of root: the sandbox must not depend on who runs dsh.
const t = useMockedHeadless()
const NOBODY = { uid: 65534, gid: 65534 }

beforeEach(() => {
  // The user's own home and workspace.
  mkdirSync(t.home, { recursive: true })
  for (const folder of [t.root, t.home, t.work]) chownSync(folder, NOBODY.uid, NOBODY.gid)
})

async function bashAsNobody(command: string, args: string[] = []): Promise<string> {
  t.mock.enqueue(
    reply.toolCalls([{ name: 'bash', arguments: { description: 'Run a command', command } }]),
    reply.text('done'),
  )
  const result = await runDsh(['--profile', 'headless', ...args, 'attack'], {
    home: t.home,
    cwd: t.work,
    env: { ...t.env(), HOME: t.root },
    asUser: NOBODY,
  })
  expect(result.stderr).toBe('')
  expect(result.code).toBe(0)
  return toolTexts(t.mock.requests.at(-1))[0] ?? ''
}

let outside: string
let loopback: HttpTestHost
beforeAll(async () => {
  // A folder the user may write on the host, to aim at.
  outside = await mkdtemp(path.join(os.tmpdir(), 'dsh-unprivileged-out-'))
  chmodSync(outside, 0o777)
  loopback = await startHttpTestHost('127.0.0.1', 'loopback-secret')
})
afterAll(async () => {
  await loopback.close()
  await rm(outside, { recursive: true, force: true })
})

describe('sandbox confinement with dsh run as an ordinary user', () => {
  it('no capabilities, seccomp, no remount; the workspace stays writable', async () => {
    const text = await bashAsNobody(
      `id -u; grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status; mount -o remount,bind,rw / ; echo x > ${outside}/escaped; unshare -Ur true && echo NESTED; echo ok > inside.txt; echo end`,
    )
    expect(text).toMatch(/^65534$/m)
    expect(text).toMatch(/CapEff:\s+0000000000000000/)
    expect(text).toMatch(/Seccomp:\s+2/)
    expect(text).not.toContain('NESTED')
    expect(existsSync(path.join(outside, 'escaped'))).toBe(false)
    expect(readFileSync(path.join(t.work, 'inside.txt'), 'utf8')).toBe('ok\n')
  })

  it('a Unix socket the user could reach outside the sandbox receives no connection from inside', async () => {
    const place = path.join(outside, 'agent.sock')
    const connected: string[] = []
    const server: Server = createServer((socket) => {
      connected.push(place)
      socket.end('pwned\n')
    })
    await new Promise<void>((resolve) => server.listen(place, resolve))
    chmodSync(place, 0o777)
    try {
      const text = await bashAsNobody(
        `python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect("${place}"); print(s.recv(5))'; echo end`,
      )
      expect(text).not.toContain('pwned')
      expect(text).toContain('Operation not permitted')
      expect(connected).toEqual([])
    } finally {
      server.close()
    }
  })

  it('protected paths cannot be created; nothing survives the command', async () => {
    const tag = `dsh-unprivileged-survivor-${process.pid}`
    const text = await bashAsNobody(
      `mkdir -p .git/hooks; echo {} > .mcp.json; nohup setsid bash -c 'exec -a ${tag} sleep 1000' >/dev/null 2>&1 & echo end`,
    )
    expect(text).toContain('end')
    expect(existsSync(path.join(t.work, '.git'))).toBe(false)
    expect(existsSync(path.join(t.work, '.mcp.json'))).toBe(false)
    expect(await liveWithMarker(tag)).toEqual([])
  })

  it('no network setting reaches the host loopback; the proxy still serves an allowlisted host', async () => {
    const testHost = await startHttpTestHost('127.0.0.2', 'registry-answer')
    writeFileSync(
      path.join(t.home, 'cordis.patch.yml'),
      `- id: sandbox-network\n  config:\n    allowedHosts: [registry.test]\n    staticHosts: { registry.test: '127.0.0.2' }\n    publicRanges: ['127.0.0.2/32']\n`,
    )
    chownSync(path.join(t.home, 'cordis.patch.yml'), NOBODY.uid, NOBODY.gid)
    try {
      for (const network of ['off', 'proxy', 'on']) {
        const text = await bashAsNobody(
          `curl -sS --max-time 5 --noproxy '*' http://127.0.0.1:${loopback.port}/; curl -sS --max-time 5 http://127.0.0.1:${loopback.port}/; echo end`,
          ['--network', network],
        )
        expect(text, network).toContain('end')
        expect(text, network).not.toContain('loopback-secret')
      }
      expect(loopback.hits).toEqual([])
      const allowed = await bashAsNobody(`curl -sS --max-time 10 http://registry.test:${testHost.port}/`, [
        '--network',
        'proxy',
      ])
      expect(allowed).toContain('registry-answer')
    } finally {
      await testHost.close()
    }
  })
})
