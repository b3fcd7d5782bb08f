import { execFile } from 'node:child_process'
import { access, mkdir, mkdtemp, readFile, realpath, rm, symlink, writeFile } from 'node:fs/promises'
import { createServer, type Server, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from '@dsh/cordis'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { liveWithMarker } from '../../../shell/shell/tests/processes.ts'
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
    network: 'off',
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
  const ran = await new Promise<Ran>((resolve) => {
    execFile(program!, args, { cwd, encoding: 'utf8' }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0
      resolve({ code, stdout, stderr })
    })
  })
  await wrapped.release?.()
  return ran
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
    const result = await run(
      `pwd; cat hello.txt; echo; touch /tmp/${marker} && echo wrote-tmp`,
      policy({ mode: 'read-only' }),
    )
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

  it('a readable root under /tmp stays visible read-only; the rest of the host /tmp stays hidden', async () => {
    await boot()
    const tool = await realpath(await mkdtemp(join(tmpdir(), 'dsh-sandbox-tool-')))
    const other = await realpath(await mkdtemp(join(tmpdir(), 'dsh-sandbox-other-')))
    try {
      await writeFile(join(tool, 'server.js'), 'the server')
      await writeFile(join(other, 'note.txt'), 'not for the command')
      const rules = policy({ readableRoots: [tool] })
      const read = await run(`cat ${tool}/server.js`, rules)
      expect(read).toMatchObject({ code: 0, stdout: 'the server' })
      const write = await run(`echo changed > ${tool}/server.js`, rules)
      expect(write.code).not.toBe(0)
      expect(write.stderr).toMatch(/Read-only file system/)
      expect(await readFile(join(tool, 'server.js'), 'utf8')).toBe('the server')
      const hidden = await run(`cat ${other}/note.txt`, rules)
      expect(hidden.code).not.toBe(0)
      expect(hidden.stdout).toBe('')
    } finally {
      await rm(tool, { recursive: true, force: true })
      await rm(other, { recursive: true, force: true })
    }
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

    it('off: the host loopback is out of reach; proxy and on are refused without the network service', async () => {
      await boot()
      const connect = `echo > /dev/tcp/127.0.0.1/${port} && echo connected`
      const off = await run(connect, policy({ network: 'off' }))
      expect(off.code).not.toBe(0)
      expect(off.stdout).not.toContain('connected')
      expect(sockets.size).toBe(0)
      for (const network of ['proxy', 'on'] as const) {
        const wrapped = await root.sandbox.wrap(['true'], policy({ network, proxyToken: 'x' }), workspace)
        expect(wrapped).toEqual({ refused: expect.stringMatching(/sandbox network service .* is not running/) })
      }
      const tokenless = await root.sandbox.wrap(['true'], policy({ network: 'proxy' }), workspace)
      expect(tokenless).toEqual({ refused: expect.stringMatching(/needs the proxy grant/) })
      const unknown = await root.sandbox.wrap(['true'], policy({ network: 'full' as never }), workspace)
      expect(unknown).toEqual({ refused: expect.stringMatching(/unknown network setting "full"/) })
    })
  })

  describe('attacks from inside (dsh runs as root here, as in CI)', () => {
    it('runs with no capabilities, no_new_privs and a seccomp filter', async () => {
      await boot()
      const result = await run('grep -E "^(CapEff|CapPrm|NoNewPrivs|Seccomp):" /proc/self/status', policy())
      expect(result.code).toBe(0)
      expect(result.stdout).toMatch(/CapPrm:\s+0000000000000000/)
      expect(result.stdout).toMatch(/CapEff:\s+0000000000000000/)
      expect(result.stdout).toMatch(/NoNewPrivs:\s+1/)
      expect(result.stdout).toMatch(/Seccomp:\s+2/)
    })

    it('cannot remount the host writable, mount anything, or make namespaces (unshare, nested bwrap)', async () => {
      await boot()
      for (const mode of ['read-only', 'workspace-write'] as const) {
        const remount = await run(`mount -o remount,bind,rw / ; echo x > ${outside}/escaped`, policy({ mode }))
        expect(remount.code).not.toBe(0)
        expect(await exists(join(outside, 'escaped'))).toBe(false)
        const gitRemount = await run('mount -o remount,bind,rw .git; touch .git/config', policy({ mode }))
        expect(gitRemount.code).not.toBe(0)
        expect(await exists(join(workspace, '.git', 'config'))).toBe(false)
      }
      const tmpfs = await run('mount -t tmpfs none /mnt && echo mounted', policy())
      expect(tmpfs.stdout).not.toContain('mounted')
      for (const command of [
        'unshare -m true',
        'unshare -U true',
        'unshare -Ur true',
        'unshare -n true',
        'bwrap --ro-bind / / true',
      ]) {
        const result = await run(`${command} && echo escaped`, policy())
        expect(result.stdout, command).not.toContain('escaped')
        expect(result.code, command).not.toBe(0)
      }
    })

    it('cannot connect to a Unix socket on the host (in /tmp or elsewhere); socketpair still works', async () => {
      await boot()
      const connections: string[] = []
      const servers: Server[] = []
      const hostTmp = await mkdtemp(join(tmpdir(), 'dsh-sandbox-sock-'))
      try {
        for (const where of [join(outside, 'host.sock'), join(hostTmp, 'host.sock'), join(workspace, 'ws.sock')]) {
          const server = createServer((socket) => {
            connections.push(where)
            socket.end()
          })
          await new Promise<void>((resolve) => server.listen(where, resolve))
          servers.push(server)
          const script = `import socket; s = socket.socket(socket.AF_UNIX); s.connect(${JSON.stringify(where)}); print("connected")`
          const result = await run(`python3 -c '${script}'`, policy())
          expect(result.stdout).not.toContain('connected')
          expect(result.stderr).toMatch(/Operation not permitted|No such file/)
        }
        expect(connections).toEqual([])
        const pair = await run(
          `python3 -c 'import socket; a, b = socket.socketpair(); a.send(b"hi"); print(b.recv(2).decode())'`,
          policy(),
        )
        expect(pair).toMatchObject({ code: 0, stdout: 'hi\n' })
      } finally {
        for (const server of servers) server.close()
        await rm(hostTmp, { recursive: true, force: true })
      }
    })

    it('cannot trace another process or read its memory', async () => {
      await boot()
      const result = await run(
        'sleep 100 & python3 -c "import ctypes,sys; libc = ctypes.CDLL(None); print(libc.ptrace(16, int(sys.argv[1]), 0, 0))" $!',
        policy(),
      )
      expect(result.stdout.trim()).toBe('-1')
    })

    it('a missing .git cannot be created, and the stand-in is gone afterwards; other files can', async () => {
      await boot()
      await rm(join(workspace, '.git'), { recursive: true })
      const protectedPaths = ['.git', '.dsh', '.claude', '.codex', '.agents', '.mcp.json'].map((name) =>
        join(workspace, name),
      )
      const rules = policy({ protectedPaths })
      const attack = await run(
        'mkdir -p .git/hooks; echo "id > /tmp/pwned" > .git/hooks/post-checkout; mkdir .claude; echo {} > .mcp.json; ' +
          'rm -rf .dsh; mv .codex elsewhere; echo ok > legit.txt',
        rules,
      )
      expect(attack.code).toBe(0)
      for (const item of protectedPaths) expect(await exists(item), item).toBe(false)
      expect(await exists(join(workspace, 'elsewhere'))).toBe(false)
      expect(await readFile(join(workspace, 'legit.txt'), 'utf8')).toBe('ok\n')
    })

    it('refuses to run when a protected path is a planted symlink, and follows none', async () => {
      await boot()
      await rm(join(workspace, '.git'), { recursive: true })
      await symlink(outside, join(workspace, '.git'))
      const wrapped = await root.sandbox.wrap(['true'], policy(), workspace)
      expect(wrapped).toEqual({ refused: expect.stringMatching(/protected path .*\.git is a symlink/) })
    })

    it('the private /tmp holds even when the workspace lies under /tmp; TMPDIR is the session temp folder', async () => {
      await boot()
      const temp = await realpath(await mkdtemp('/var/tmp/dsh-sandbox-temp-'))
      try {
        const marker = `dsh-sandbox-private-ws-${process.pid}`
        const result = await run(
          `touch /tmp/${marker} && echo "$TMPDIR" && echo kept > "$TMPDIR/file" && echo in-ws > here.txt`,
          policy({ writableRoots: [workspace, temp], tempDir: temp }),
        )
        expect(result).toMatchObject({ code: 0, stdout: `${temp}\n` })
        expect(workspace.startsWith('/tmp/')).toBe(true)
        expect(await exists(join('/tmp', marker))).toBe(false)
        expect(await readFile(join(temp, 'file'), 'utf8')).toBe('kept\n')
        expect(await readFile(join(workspace, 'here.txt'), 'utf8')).toBe('in-ws\n')
      } finally {
        await rm(temp, { recursive: true, force: true })
      }
    })

    it('hides the configured paths; inside a hidden folder only its secret files are hidden', async () => {
      const home = await realpath(await mkdtemp('/var/tmp/dsh-sandbox-home-'))
      try {
        await writeFile(join(home, '.credentials.yaml'), 'DEEPSEEK_API_KEY: sk-hidden-123456\n')
        await mkdir(join(home, 'profiles', 'web'), { recursive: true })
        await writeFile(join(home, 'profiles', 'web', '.env'), 'OTHER_KEY=sk-hidden-profile\n')
        await writeFile(join(home, 'settings.yaml'), 'visible: true\n')
        await boot({
          hiddenPaths: [home],
          secretFiles: [join(home, '.credentials.yaml'), join(home, 'profiles', '*', '.env')],
        })
        const away = await run(`cat ${home}/.credentials.yaml; ls -A ${home}; echo end`, policy())
        expect(away.stdout).not.toContain('sk-hidden')
        expect(away.stdout.trim()).toBe('end')
        const project = join(home, 'project')
        await mkdir(project)
        const inside = await run(
          `cat ../.credentials.yaml ../profiles/web/.env ../settings.yaml; touch ../.credentials.yaml`,
          policy({ writableRoots: [project] }),
          project,
        )
        expect(inside.stdout).toBe('visible: true\n')
        expect(inside.stdout).not.toContain('sk-hidden')
      } finally {
        await rm(home, { recursive: true, force: true })
      }
    })
  })

  it('mode off confines nothing but reaps: a detached background process ends with the command', async () => {
    await boot()
    const wrapped = await root.sandbox.wrap(['bash', '-c', 'true'], policy({ mode: 'off' }), workspace)
    expect(wrapped).toHaveProperty('argv')
    const tag = `dsh-sandbox-reaped-${process.pid}`
    const result = await run(
      `nohup setsid bash -c 'exec -a ${tag} sleep 1000' >/dev/null 2>&1 & touch ${outside}/written; echo done`,
      policy({ mode: 'off' }),
    )
    expect(result).toMatchObject({ code: 0, stdout: 'done\n' })
    // Unconfined: it wrote outside the workspace.
    expect(await exists(join(outside, 'written'))).toBe(true)
    expect(await liveWithMarker(tag)).toEqual([])
  })

  it('refuses a malformed policy', async () => {
    await boot()
    const relative = await root.sandbox.wrap(['true'], policy({ writableRoots: ['relative/dir'] }), workspace)
    expect(relative).toEqual({
      refused: expect.stringMatching(/writableRoots holds "relative\/dir", which is not an absolute path/),
    })
    const mode = await root.sandbox.wrap(['true'], policy({ mode: 'full' as never }), workspace)
    expect(mode).toEqual({ refused: expect.stringMatching(/unknown sandbox mode "full"/) })
  })

  it('when bwrap is missing: unavailable with the reason, confined modes refused, off still passes', async () => {
    await boot({ bwrapPath: join(workspace, 'no-such-bwrap') })
    const availability = await root.sandbox.available()
    expect(availability).toEqual({
      ok: false,
      reason: expect.stringContaining(`not found at ${join(workspace, 'no-such-bwrap')}`),
    })
    for (const mode of ['read-only', 'workspace-write'] as const) {
      const wrapped = await root.sandbox.wrap(['bash', '-c', 'true'], policy({ mode }), workspace)
      expect(wrapped).toEqual({
        refused: expect.stringMatching(
          new RegExp(`needs the ${mode} sandbox, which is unavailable here .*not found.*so it was not run`),
        ),
      })
    }
    // Mode off never needs bwrap: without it the command runs as given.
    expect(await root.sandbox.wrap(['true'], policy({ mode: 'off' }), workspace)).toEqual({ argv: ['true'] })
  })

  it('when bwrap fails its self-check: unavailable, and confined commands are refused', async () => {
    const fake = join(workspace, 'broken-bwrap')
    await writeFile(fake, '#!/bin/sh\necho "bwrap: No permissions to creating new namespace" >&2\nexit 1\n', {
      mode: 0o755,
    })
    await boot({ bwrapPath: fake })
    expect(await root.sandbox.available()).toEqual({
      ok: false,
      reason: expect.stringMatching(/failed its self-check.*No permissions/),
    })
    expect(await root.sandbox.wrap(['true'], policy(), workspace)).toHaveProperty('refused')
  })
})
