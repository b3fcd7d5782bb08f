import { mkdir, mkdtemp, readdir, realpath, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import { Context } from '@dsh/cordis'
import * as sandboxPlugin from '@dsh/sandbox'
import type { BwrapSandboxConfig } from '@dsh/sandbox'
import * as subprocessPlugin from '@dsh/subprocess'
import type { LocalSubprocessConfig } from '@dsh/subprocess'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import * as shellPlugin from '../src/index.ts'
import { type BashShellConfig, type SandboxPolicy, ShellError } from '../src/index.ts'
import { liveWithMarker } from './processes.ts'

let root: Context
let dir: string

beforeEach(async () => {
  root = new Context()
  dir = await realpath(await mkdtemp(join(tmpdir(), 'dsh-shell-')))
  await mkdir(join(dir, '.git'))
})

afterEach(async () => {
  await root.fiber.dispose()
  await rm(dir, { recursive: true, force: true })
})

async function boot(
  options: { sandbox?: Partial<BwrapSandboxConfig> | false; subprocess?: Partial<LocalSubprocessConfig> } = {},
) {
  const subprocess = root.plugin(subprocessPlugin, (options.subprocess ?? {}) as LocalSubprocessConfig)
  await subprocess
  if (options.sandbox !== false) await root.plugin(sandboxPlugin, (options.sandbox ?? {}) as BwrapSandboxConfig)
  await root.plugin(shellPlugin, {} as BashShellConfig)
  return { subprocess }
}

function policy(overrides: Partial<SandboxPolicy> = {}): SandboxPolicy {
  return {
    mode: 'workspace-write',
    writableRoots: [dir],
    protectedPaths: [join(dir, '.git')],
    network: 'off',
    ...overrides,
  }
}

function collect(stream: Readable): { text: () => string } {
  let text = ''
  stream.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')))
  return { text: () => text }
}

async function run(command: string, rules: SandboxPolicy = policy()) {
  const handle = await root.shell.run({ command, cwd: dir, policy: rules, timeoutMs: 60_000 })
  const out = collect(handle.stdout)
  const err = collect(handle.stderr)
  const exit = await handle.done
  return { exit, stdout: out.text(), stderr: err.text() }
}

async function until(check: () => Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 20))
}

let markers = 0
function marker(): string {
  markers += 1
  return `dsh-shell-marker-${process.pid}-${markers}`
}

describe('ctx.shell (bash)', () => {
  it('runs a fresh bash -c per call with the configured variables and a scrubbed environment', async () => {
    await boot()
    process.env.SHELL_TEST_TOKEN = 'leak'
    try {
      const first = await run(
        'FOO=kept; echo "$NO_COLOR $TERM ${SHELL_TEST_TOKEN:-none}"; exit 4',
        policy({ mode: 'off' }),
      )
      expect(first.exit).toMatchObject({ code: 4, timedOut: false, cancelled: false })
      expect(first.stdout).toBe('1 dumb none\n')
      const second = await run('echo "${FOO:-fresh}"', policy({ mode: 'off' }))
      expect(second.stdout).toBe('fresh\n')
    } finally {
      delete process.env.SHELL_TEST_TOKEN
    }
  })

  it('confines the command: the workspace is writable, .git and the rest of the host are not', async () => {
    await boot()
    const inside = await run('echo x > inside.txt && cat inside.txt')
    expect(inside.exit.code).toBe(0)
    expect(inside.stdout).toBe('x\n')
    const git = await run('touch .git/HEAD')
    expect(git.exit.code).not.toBe(0)
    expect(git.stderr).toMatch(/Read-only file system/)
    const readOnly = await run('touch another.txt', policy({ mode: 'read-only' }))
    expect(readOnly.stderr).toMatch(/Read-only file system/)
  })

  it('refuses a confined command when bwrap is missing, and when there is no sandbox service at all', async () => {
    await boot({ sandbox: { bwrapPath: join(dir, 'missing-bwrap') } })
    const refused = root.shell.run({ command: `touch ${dir}/should-not-exist`, cwd: dir, policy: policy() })
    await expect(refused).rejects.toBeInstanceOf(ShellError)
    await expect(refused).rejects.toMatchObject({
      code: 'SANDBOX_REFUSED',
      message: expect.stringMatching(/unavailable here .*not found/),
    })
    await expect(readdir(dir)).resolves.toEqual(['.git'])

    await root.fiber.dispose()
    await boot({ sandbox: false })
    await expect(
      root.shell.run({ command: 'true', cwd: dir, policy: policy({ mode: 'read-only' }) }),
    ).rejects.toMatchObject({
      code: 'SANDBOX_REFUSED',
      message: expect.stringMatching(/no sandbox service is running/),
    })
    // Mode off needs no sandbox.
    expect((await run('true', policy({ mode: 'off' }))).exit.code).toBe(0)
  })

  it('says when the working directory is unusable', async () => {
    await boot()
    await expect(root.shell.run({ command: 'true', cwd: join(dir, 'nope'), policy: policy() })).rejects.toMatchObject({
      code: 'BAD_CWD',
    })
  })

  it('kills every sandboxed process on timeout, leaving no survivor', async () => {
    await boot()
    const tag = marker()
    // Two marker processes (one in a subshell, one orphaned inside the sandbox); `ready` appears once both run.
    const start = (n: number) => `bash -c 'touch started-${n}; exec -a ${tag} sleep 1000'`
    const handle = await root.shell.run({
      command: `${start(1)} & (${start(2)} &); until [ -e started-1 ] && [ -e started-2 ]; do sleep 0.01; done; touch ready; wait`,
      cwd: dir,
      policy: policy(),
      timeoutMs: 2_000,
    })
    const exit = await handle.done
    expect(exit.timedOut).toBe(true)
    expect(await readdir(dir)).toContain('ready')
    expect(await liveWithMarker(tag)).toEqual([])
  })

  it('kills every sandboxed process when cancelled, and when the subprocess plugin is disposed', async () => {
    const { subprocess } = await boot()
    const tag = marker()
    const abort = new AbortController()
    const cancelled = await root.shell.run({
      command: `exec -a ${tag} sleep 1000 & wait`,
      cwd: dir,
      policy: policy(),
      signal: abort.signal,
    })
    await until(async () => (await liveWithMarker(tag)).length === 1)
    abort.abort()
    expect((await cancelled.done).cancelled).toBe(true)
    expect(await liveWithMarker(tag)).toEqual([])

    const other = marker()
    const running = await root.shell.run({ command: `exec -a ${other} sleep 1000 & wait`, cwd: dir, policy: policy() })
    await until(async () => (await liveWithMarker(other)).length === 1)
    await subprocess.dispose()
    expect((await running.done).cancelled).toBe(true)
    expect(await liveWithMarker(other)).toEqual([])
  })
})
