import { type ChildProcess, spawn } from 'node:child_process'
import { statSync } from 'node:fs'
import { type Context, Schema } from '@dsh/cordis'
import { EnvironmentPolicy, type EnvironmentPolicyConfig, environmentPolicySchema } from './env.ts'
import { groupAlive, killTree } from './procfs.ts'
import { type ProcessExit, type ProcessHandle, type ProcessSpec, Subprocess } from './seam.ts'

export interface LocalSubprocessConfig {
  killGraceMs: number
  drainMs: number
  pollIntervalMs: number
  killWaitMs: number
  environment: EnvironmentPolicyConfig
}

export const Config: Schema<LocalSubprocessConfig> = Schema.object({
  killGraceMs: Schema.natural()
    .default(3_000)
    .description('After SIGTERM, how long a process tree has to exit before it gets SIGKILL, in milliseconds.'),
  drainMs: Schema.natural()
    .default(2_000)
    .description(
      'After the leader exits, how long to keep reading its stdout and stderr (background children may hold them open), in milliseconds.',
    ),
  pollIntervalMs: Schema.natural()
    .min(1)
    .default(25)
    .description('How often a dying tree is checked for survivors, in milliseconds.'),
  killWaitMs: Schema.natural()
    .min(1)
    .default(10_000)
    .description(
      'After SIGKILL, how long to wait for the tree to vanish before giving up and logging it, in milliseconds.',
    ),
  environment: environmentPolicySchema('environment'),
})

type StopReason = 'timeout' | 'cancel'

/** One started process and everything needed to stop it. */
class LiveProcess {
  readonly handle: ProcessHandle
  /** Settles with `done` (never rejects). */
  readonly settled: Promise<void>
  private stopping: Promise<void> | undefined
  private leaderExited = false
  /** `done` resolved with nothing left running: there is nothing to stop any more. */
  private over = false
  private timedOut = false
  private cancelled = false
  private cleanup: (() => void)[] = []

  constructor(
    private readonly child: ChildProcess,
    spec: ProcessSpec,
    private readonly settings: LocalSubprocessConfig,
    private readonly onStuck: (pid: number) => void,
  ) {
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve, reject) => {
      child.once('exit', (code, signal) => {
        this.leaderExited = true
        resolve({ code, signal })
      })
      child.once('error', (error) => {
        if (child.pid === undefined)
          reject(new Error(`could not start ${spec.argv[0]}: ${error.message}`, { cause: error }))
      })
    })
    const closed = new Promise<void>((resolve) => child.once('close', () => resolve()))

    if (spec.timeoutMs !== undefined) {
      const timer = setTimeout(() => void this.stop('timeout'), spec.timeoutMs)
      this.cleanup.push(() => clearTimeout(timer))
    }
    const { signal } = spec
    if (signal) {
      const onAbort = () => void this.stop('cancel')
      if (signal.aborted) queueMicrotask(onAbort)
      else {
        signal.addEventListener('abort', onAbort, { once: true })
        this.cleanup.push(() => signal.removeEventListener('abort', onAbort))
      }
    }

    const done = (async (): Promise<ProcessExit> => {
      try {
        const exit = await exited
        await within(closed, settings.drainMs)
        if (this.stopping) await this.stopping
        child.stdout?.destroy()
        child.stderr?.destroy()
        const lingering = !this.stopping && child.pid !== undefined && (await groupAlive(child.pid))
        // Once the group is gone its id may be reused: never signal it again.
        if (!lingering && !this.stopping) this.over = true
        return { code: exit.code, signal: exit.signal, timedOut: this.timedOut, cancelled: this.cancelled, lingering }
      } finally {
        for (const step of this.cleanup) step()
        this.cleanup = []
      }
    })()
    // The caller may never await `done`; a failed start must not become an unhandled rejection.
    this.settled = done.then(
      () => undefined,
      () => undefined,
    )
    const stdin = child.stdin
    const keepOpen = spec.stdin === undefined && spec.openStdin === true
    if (stdin) {
      stdin.on('error', () => {}) // the program may exit without reading its input
      if (!keepOpen) stdin.end(spec.stdin ?? '')
    }
    this.handle = {
      get pid() {
        return child.pid
      },
      ...(keepOpen && stdin ? { stdin } : {}),
      stdout: child.stdout!,
      stderr: child.stderr!,
      done,
      kill: () => this.stop('cancel'),
    }
  }

  /** Kills the tree once; later calls share the first kill. */
  stop(reason: StopReason): Promise<void> {
    const pid = this.child.pid
    if (pid === undefined || (this.over && !this.stopping)) return Promise.resolve()
    if (!this.stopping) {
      if (reason === 'timeout') this.timedOut = true
      else this.cancelled = true
      this.stopping = killTree({
        pid,
        leaderAlive: !this.leaderExited,
        graceMs: this.settings.killGraceMs,
        pollMs: this.settings.pollIntervalMs,
        waitMs: this.settings.killWaitMs,
      }).then((gone) => {
        if (!gone) this.onStuck(pid)
      })
    }
    return this.stopping
  }
}

/**
 * The local provider of `ctx.subprocess`: `child_process.spawn` with each
 * process leading a new process group (and session). Stopping walks /proc
 * for the group and every descendant, so zombies that no one reaps do not
 * count as alive and sandboxed children in their own session are not missed.
 */
export class LocalSubprocess extends Subprocess {
  static Config = Config

  private readonly settings: LocalSubprocessConfig
  private readonly policy: EnvironmentPolicy
  private readonly live = new Set<LiveProcess>()
  private readonly lingering = new Set<LiveProcess>()
  private disposed = false
  private readonly log = this.home.logger('subprocess')

  constructor(ctx: Context, config: LocalSubprocessConfig) {
    super(ctx)
    this.settings = config
    this.policy = new EnvironmentPolicy(config.environment)
    ctx.effect(() => () => this.stopAll(), 'subprocess: kill every process')
  }

  run(spec: ProcessSpec): ProcessHandle {
    if (this.disposed) throw new Error('the subprocess service is disposed; no new process can start')
    checkSpec(spec)
    this.forgetFinishedLingerers()
    const child = spawn(spec.argv[0] as string, spec.argv.slice(1), {
      cwd: spec.cwd,
      env: this.environment(spec.env),
      detached: true,
      stdio: [spec.stdin === undefined && spec.openStdin !== true ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      windowsHide: true,
    })
    const proc = new LiveProcess(child, spec, this.settings, (pid) =>
      this.log.error(
        'process tree of %d (%s) survived SIGKILL for %dms; giving up on it',
        pid,
        spec.argv[0],
        this.settings.killWaitMs,
      ),
    )
    this.live.add(proc)
    void proc.handle.done.then(
      (exit) => {
        // A leader that left background processes stays on the list so that disposal stops them.
        if (exit.lingering) this.lingering.add(proc)
        else this.live.delete(proc)
      },
      () => this.live.delete(proc),
    )
    return proc.handle
  }

  environment(extra?: Readonly<Record<string, string>>): Record<string, string> {
    return { ...this.policy.apply(process.env), ...extra }
  }

  /** Drops lingering groups that have since ended by themselves. */
  private forgetFinishedLingerers(): void {
    for (const proc of this.lingering) {
      const pid = proc.handle.pid
      if (pid === undefined) continue
      void groupAlive(pid).then((alive) => {
        if (alive) return
        this.lingering.delete(proc)
        this.live.delete(proc)
      })
    }
  }

  private async stopAll(): Promise<void> {
    this.disposed = true
    const all = [...this.live]
    await Promise.all(all.map((proc) => proc.stop('cancel')))
    await Promise.all(all.map((proc) => proc.settled))
    this.live.clear()
    this.lingering.clear()
  }
}

function checkSpec(spec: ProcessSpec): void {
  if (!Array.isArray(spec?.argv) || spec.argv.length === 0 || !spec.argv.every((arg) => typeof arg === 'string')) {
    throw new TypeError('subprocess: argv must be a non-empty list of strings')
  }
  if (spec.argv[0] === '') throw new TypeError('subprocess: argv[0] is empty')
  if (spec.timeoutMs !== undefined && !(Number.isFinite(spec.timeoutMs) && spec.timeoutMs >= 0)) {
    throw new TypeError(`subprocess: timeoutMs must be a non-negative number, not ${spec.timeoutMs}`)
  }
  let isDirectory = false
  try {
    isDirectory = statSync(spec.cwd).isDirectory()
  } catch {
    // reported below
  }
  if (!isDirectory)
    throw new Error(`subprocess: the working directory ${spec.cwd} does not exist or is not a directory`)
}

/** Waits for `promise`, but no longer than `ms`; the timer does not outlive the wait. */
async function within(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  await Promise.race([promise, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))])
  clearTimeout(timer)
}
