import { execFile } from 'node:child_process'
import { access, mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises'
import { createServer, type Server, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from '@dsh/cordis'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import * as sandboxPlugin from '../src/index.ts'
import type { BwrapSandboxConfig, SandboxPolicy } from '../src/index.ts'

let root: Context
let workspace: string
let outside: string

beforeEach(async () => {
  root = new Context()
  workspace = await realpath(await mkdtemp(join(tmpdir(), 'dsh-sandbox-ws-')))
  await mkdir(join(workspace, '.git'))
  // Outside the workspace and outside /tmp (which the sandbox replaces with a private one).
  outside = await realpath(await mkdtemp('/var/tmp/dsh-sandbox-out-'))
})

afterEach(async () => {
  await root.fiber.dispose()
  await rm(workspace, { recursive: true, force: true })
  await rm(outside, { recursive: true, force: true })
})

async function boot(config: Partial<BwrapSandboxConfig> = {}) {
  await root.plugin(sandboxPlugin, config as BwrapSandboxConfig)
}

function policy(overrides: Partial<SandboxPolicy> = {}): SandboxPolicy {
  return {
    mode: 'workspace-write',
    writableRoots: [workspace],
    protectedPaths: [join(workspace, '.git')],
    network: false,
    ...overrides,
  }
}

interface Ran {
  code: number
  stdout: string
  stderr: string
}

/** Wraps `bash -c script` under the policy and runs it for real. */
async function run(script: string, rules: SandboxPolicy, cwd = workspace): Promise<Ran> {
  const wrapped = await root.sandbox.wrap(['bash', '-c', script], rules, cwd)
  if (!('argv' in wrapped)) throw new Error(`refused: ${wrapped.refused}`)
  const [program, ...args] = wrapped.argv
  return new Promise((resolve) => {
    execFile(program!, args, { cwd, encoding: 'utf8' }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0
      resolve({ code, stdout, stderr })
    })
  })
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  )
}

describe('sandbox (bubblewrap)', () => {
  it('passes its self-check here and caches it', async () => {
    await boot()
    const first = root.sandbox.available()
    expect(await first).toEqual({ ok: true })
    expect(root.sandbox.available()).toBe(first)
  })

  it('read-only: every write to the host filesystem fails with a read-only file system error', async () => {
    await boot()
    const result = await run(`touch ${workspace}/new-file`, policy({ mode: 'read-only' }))
    expect(result.code).not.toBe(0)
    expect(result.stderr).toMatch(/Read-only file system/)
    expect(await exists(join(workspace, 'new-file'))).toBe(false)
    const elsewhere = await run(`touch ${outside}/new-file`, policy({ mode: 'read-only' }))
    expect(elsewhere.stderr).toMatch(/Read-only file system/)
  })

  it('read-only: reads work, the working directory is the one asked for, and /tmp is private', async () => {
    await boot()
    await writeFile(join(workspace, 'hello.txt'), 'hi there')
    const marker = `dsh-sandbox-private-${process.pid}-${Date.now()}`
    const result = await run(`pwd; cat hello.txt; echo; touch /tmp/${marker} && echo wrote-tmp`, policy({ mode: 'read-only' }))
    expect(result.code).toBe(0)
    expect(result.stdout).toBe(`${workspace}\nhi there\nwrote-tmp\n`)
    expect(await exists(join('/tmp', marker))).toBe(false)
  })

  it('workspace-write: the workspace is writable, .git and everything outside are not', async () => {
    await boot()
    const inside = await run('echo data > made-here && cat made-here', policy())
    expect(inside).toMatchObject({ code: 0, stdout: 'data\n' })
    expect(await exists(join(workspace, 'made-here'))).toBe(true)

    const git = await run('touch .git/config', policy())
    expect(git.code).not.toBe(0)
    expect(git.stderr).toMatch(/Read-only file system/)
    expect(await exists(join(workspace, '.git', 'config'))).toBe(false)

    const away = await run(`touch ${outside}/escaped`, policy())
    expect(away.code).not.toBe(0)
    expect(away.stderr).toMatch(/Read-only file system/)
    expect(await exists(join(outside, 'escaped'))).toBe(false)
  })

  it('workspace-write: listing /tmp as writable shares the host /tmp instead of a private one', async () => {
    await boot()
    const marker = `dsh-sandbox-shared-${process.pid}-${Date.now()}`
    try {
      const result = await run(`touch /tmp/${marker}`, policy({ writableRoots: [workspace, tmpdir()] }))
      expect(result.code).toBe(0)
      expect(await exists(join('/tmp', marker))).toBe(true)
    } finally {
      await rm(join('/tmp', marker), { force: true })
    }
  })

  describe('network', () => {
    let server: Server
    let port: number
    const sockets = new Set<Socket>()

    beforeEach(async () => {
      server = createServer((socket) => {
        sockets.add(socket)
        socket.on('close', () => sockets.delete(socket))
        socket.end()
      })
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      port = (server.address() as { port: number }).port
    })

    afterEach(async () => {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    })

    it('is cut off unless the policy allows it', async () => {
      await boot()
      const connect = `echo > /dev/tcp/127.0.0.1/${port} && echo connected`
      const off = await run(connect, policy({ network: false }))
      expect(off.code).not.toBe(0)
      expect(off.stdout).not.toContain('connected')
      const on = await run(connect, policy({ network: true }))
      expect(on).toMatchObject({ code: 0, stdout: 'connected\n' })
    })
  })

  it('mode off returns the command line unchanged', async () => {
    await boot()
    expect(await root.sandbox.wrap(['bash', '-c', 'true'], policy({ mode: 'off' }), workspace)).toEqual({ argv: ['bash', '-c', 'true'] })
  })

  it('refuses a malformed policy', async () => {
    await boot()
    const relative = await root.sandbox.wrap(['true'], policy({ writableRoots: ['relative/dir'] }), workspace)
    expect(relative).toEqual({ refused: expect.stringMatching(/writableRoots holds "relative\/dir", which is not an absolute path/) })
    const mode = await root.sandbox.wrap(['true'], policy({ mode: 'full' as never }), workspace)
    expect(mode).toEqual({ refused: expect.stringMatching(/unknown sandbox mode "full"/) })
  })

  it('when bwrap is missing: unavailable with the reason, confined modes refused, off still passes', async () => {
    await boot({ bwrapPath: join(workspace, 'no-such-bwrap') })
    const availability = await root.sandbox.available()
    expect(availability).toEqual({ ok: false, reason: expect.stringContaining(`not found at ${join(workspace, 'no-such-bwrap')}`) })
    for (const mode of ['read-only', 'workspace-write'] as const) {
      const wrapped = await root.sandbox.wrap(['bash', '-c', 'true'], policy({ mode }), workspace)
      expect(wrapped).toEqual({ refused: expect.stringMatching(new RegExp(`needs the ${mode} sandbox, which is unavailable here .*not found.*so it was not run`)) })
    }
    expect(await root.sandbox.wrap(['true'], policy({ mode: 'off' }), workspace)).toEqual({ argv: ['true'] })
  })

  it('when bwrap fails its self-check: unavailable, and confined commands are refused', async () => {
    const fake = join(workspace, 'broken-bwrap')
    await writeFile(fake, '#!/bin/sh\necho "bwrap: No permissions to creating new namespace" >&2\nexit 1\n', { mode: 0o755 })
    await boot({ bwrapPath: fake })
    expect(await root.sandbox.available()).toEqual({ ok: false, reason: expect.stringMatching(/failed its self-check.*No permissions/) })
    expect(await root.sandbox.wrap(['true'], policy(), workspace)).toHaveProperty('refused')
  })
})
