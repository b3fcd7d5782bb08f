import { mkdtemp, realpath } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import { Context } from '@dsh/cordis'
import { disposeTestRoot, LEAKY_ENVIRONMENT, mountPlugin, withEnvironment } from '@dsh/testkit'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import * as subprocessPlugin from '../src/index.ts'
import { isRunning, type LocalSubprocessConfig, type ProcessHandle } from '../src/index.ts'

let root: Context
let dir: string

beforeEach(async () => {
  root = new Context()
  dir = await realpath(await mkdtemp(join(tmpdir(), 'dsh-subprocess-')))
})

afterEach(() => disposeTestRoot(root, dir))

const boot = (config: Partial<LocalSubprocessConfig> = {}) => mountPlugin(root, subprocessPlugin, config)

function bash(script: string, extra: Partial<Parameters<Context['subprocess']['run']>[0]> = {}): ProcessHandle {
  return root.subprocess.run({ argv: ['bash', '-c', script], cwd: dir, ...extra })
}

/** Everything a stream says, as it arrives. */
function collect(stream: Readable): { text: () => string } {
  let text = ''
  stream.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')))
  return { text: () => text }
}

function pids(output: string): number[] {
  return output
    .split('\n')
    .filter((line) => /^\d+$/.test(line))
    .map(Number)
}

async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 10))
}

describe('ctx.subprocess (local)', () => {
  it('keeps stdin open with openStdin, for a program spoken to while it runs', async () => {
    await boot()
    const handle = bash('while read -r line; do echo "got $line"; [ "$line" = bye ] && exit 0; done', {
      openStdin: true,
    })
    const out = collect(handle.stdout)
    handle.stdin?.write('one\n')
    await until(() => out.text().includes('got one'))
    handle.stdin?.write('bye\n')
    expect((await handle.done).code).toBe(0)
    expect(out.text()).toBe('got one\ngot bye\n')
    expect(bash('true').stdin).toBeUndefined()
  })

  it('runs a program and reports its output and exit code', async () => {
    await boot()
    const handle = bash('echo out; echo err >&2; exit 7')
    const out = collect(handle.stdout)
    const err = collect(handle.stderr)
    expect(await handle.done).toEqual({ code: 7, signal: null, timedOut: false, cancelled: false, lingering: false })
    expect(out.text()).toBe('out\n')
    expect(err.text()).toBe('err\n')
    expect(handle.pid).toBeGreaterThan(0)
  })

  it('feeds stdin when given, and /dev/null otherwise', async () => {
    await boot()
    const fed = root.subprocess.run({ argv: ['cat'], cwd: dir, stdin: 'hello\n' })
    const fedOut = collect(fed.stdout)
    await fed.done
    expect(fedOut.text()).toBe('hello\n')
    const empty = root.subprocess.run({ argv: ['cat'], cwd: dir })
    const emptyOut = collect(empty.stdout)
    expect((await empty.done).code).toBe(0)
    expect(emptyOut.text()).toBe('')
  })

  it('runs in the given directory and starts each process in its own process group', async () => {
    await boot()
    const handle = bash('pwd; ps -o pgid= -p $$')
    const out = collect(handle.stdout)
    await handle.done
    const [cwd, pgid] = out.text().trim().split('\n')
    expect(cwd).toBe(dir)
    expect(Number(pgid)).toBe(handle.pid)
  })

  it("gives each process the environment its policy builds, with the spec's own variables on top", async () => {
    await boot({
      environment: {
        inherit: 'all',
        ignoreDefaultExcludes: false,
        exclude: ['PLAIN_*'],
        includeOnly: [],
        set: { FROM_SET: 'set' },
      },
    })
    const inherited = {
      ...LEAKY_ENVIRONMENT,
      MYSQL_PWD: 'leak-3',
      DATABASE_URL: 'postgres://u:leak-4@h/db',
      DSH_HOME: '/leak-5',
      PLAIN_SETTING: 'leak-6',
      NORMAL_SETTING: 'visible',
    }
    await withEnvironment(inherited, async () => {
      const handle = root.subprocess.run({ argv: ['env'], cwd: dir, env: { EXTRA: 'yes', GIVEN_TOKEN: 'explicit' } })
      const out = collect(handle.stdout)
      await handle.done
      expect(out.text()).not.toMatch(/leak-/)
      expect(out.text()).toContain('NORMAL_SETTING=visible')
      expect(out.text()).toContain('FROM_SET=set')
      expect(out.text()).toContain('EXTRA=yes')
      // What the caller passes is its own choice: the policy filters only what is inherited.
      expect(out.text()).toContain('GIVEN_TOKEN=explicit')
      expect(root.subprocess.environment({ EXTRA: 'yes' })).toMatchObject({
        NORMAL_SETTING: 'visible',
        FROM_SET: 'set',
        EXTRA: 'yes',
      })
    })
  })

  it('kills the whole tree on timeout and resolves only when no process of it runs', async () => {
    await boot()
    const handle = bash('sleep 1000 & echo $!; (sleep 1000 & echo $!; wait) & wait', { timeoutMs: 300 })
    const out = collect(handle.stdout)
    const exit = await handle.done
    expect(exit.timedOut).toBe(true)
    expect(exit.cancelled).toBe(false)
    expect(exit.signal).toBe('SIGTERM')
    const children = pids(out.text())
    expect(children).toHaveLength(2)
    for (const pid of children) expect(await isRunning(pid)).toBe(false)
  })

  it('escalates to SIGKILL when the tree ignores SIGTERM', async () => {
    await boot({ killGraceMs: 100 })
    const handle = bash('trap "" TERM; sleep 1000 & echo $!; wait', { timeoutMs: 200 })
    const out = collect(handle.stdout)
    const exit = await handle.done
    expect(exit.timedOut).toBe(true)
    expect(exit.signal).toBe('SIGKILL')
    const [child] = pids(out.text())
    expect(await isRunning(child!)).toBe(false)
  })

  it('kills the tree when the signal aborts, including descendants that left for their own session', async () => {
    await boot()
    const abort = new AbortController()
    const handle = bash('setsid sleep 1000 & echo $!; sleep 1000 & echo $!; wait', { signal: abort.signal })
    const out = collect(handle.stdout)
    await until(() => pids(out.text()).length === 2)
    const children = pids(out.text())
    for (const pid of children) expect(await isRunning(pid)).toBe(true)
    abort.abort()
    const exit = await handle.done
    expect(exit.cancelled).toBe(true)
    for (const pid of children) expect(await isRunning(pid)).toBe(false)
  })

  it('kill() resolves once the tree is gone', async () => {
    await boot()
    const handle = bash('sleep 1000 & echo $!; wait')
    const out = collect(handle.stdout)
    await until(() => pids(out.text()).length === 1)
    await handle.kill()
    expect(await isRunning(pids(out.text())[0]!)).toBe(false)
    expect(await isRunning(handle.pid!)).toBe(false)
    expect((await handle.done).cancelled).toBe(true)
  })

  it('an already aborted signal stops the process at once', async () => {
    await boot()
    const abort = new AbortController()
    abort.abort()
    const exit = await bash('sleep 1000', { signal: abort.signal }).done
    expect(exit.cancelled).toBe(true)
  })

  it('reports background processes left behind, and kill() stops them', async () => {
    await boot({ drainMs: 100 })
    const handle = bash('sleep 1000 >/dev/null 2>&1 & echo $!')
    const out = collect(handle.stdout)
    const exit = await handle.done
    expect(exit).toMatchObject({ code: 0, lingering: true, cancelled: false })
    const [child] = pids(out.text())
    expect(await isRunning(child!)).toBe(true)
    await handle.kill()
    expect(await isRunning(child!)).toBe(false)
  })

  it('disposing the plugin kills every process it started, lingering ones included, and awaits them', async () => {
    const fiber = await boot({ drainMs: 100 })
    const running = bash('sleep 1000 & echo $!; wait')
    const runningOut = collect(running.stdout)
    const left = bash('sleep 1000 >/dev/null 2>&1 & echo $!')
    const leftOut = collect(left.stdout)
    expect((await left.done).lingering).toBe(true)
    await until(() => pids(runningOut.text()).length === 1)
    const victims = [running.pid!, ...pids(runningOut.text()), ...pids(leftOut.text())]
    for (const pid of victims) expect(await isRunning(pid)).toBe(true)
    await fiber.dispose()
    for (const pid of victims) expect(await isRunning(pid)).toBe(false)
    expect((await running.done).cancelled).toBe(true)
  })

  it('refuses a missing working directory and a malformed argv at once, and rejects done when the program cannot start', async () => {
    await boot()
    expect(() => root.subprocess.run({ argv: ['true'], cwd: join(dir, 'missing') })).toThrow(
      /does not exist or is not a directory/,
    )
    expect(() => root.subprocess.run({ argv: [], cwd: dir })).toThrow(/argv/)
    const handle = root.subprocess.run({ argv: [join(dir, 'no-such-program')], cwd: dir })
    expect(handle.pid).toBeUndefined()
    await expect(handle.done).rejects.toThrow(/could not start .*no-such-program.*ENOENT/)
  })

  it('refuses new processes after disposal', async () => {
    const fiber = await boot()
    const service = root.subprocess
    await fiber.dispose()
    expect(() => service.run({ argv: ['true'], cwd: dir })).toThrow(/disposed/)
    expect(root.get('subprocess')).toBeUndefined()
  })
})
