import { randomBytes } from 'node:crypto'
import { closeSync, constants, openSync } from 'node:fs'
import { stat } from 'node:fs/promises'
import { isAbsolute } from 'node:path'
import { type Context, Schema, stringList, stringValue } from '@dsh/cordis'
import { unconfinedPolicy } from '@dsh/sandbox'
import pty from 'node-pty'
import { AnsiStripper } from './ansi.ts'
import { OutputBuffer } from './buffer.ts'
import { killSession, signalName, withoutSize } from './process.ts'
import {
  type CreateTerminalOptions,
  describeExit,
  type ReadOptions,
  TerminalError,
  type TerminalExit,
  type TerminalId,
  type TerminalInfo,
  type TerminalOutput,
  Terminals,
  type WaitOptions,
  type WaitResult,
} from './seam.ts'

export interface LocalTerminalsConfig {
  shell: string
  shellArgs: string[]
  term: string
  cols: number
  rows: number
  bufferBytes: number
  maxPerSession: number
  killGraceMs: number
  env: Record<string, string>
}

export const Config: Schema<LocalTerminalsConfig> = Schema.object({
  shell: stringValue(
    "The shell of interactive terminals, and the one that runs `<shell> -c <command>`. Empty: the user's `$SHELL`, else `bash`.",
  ),
  shellArgs: stringList('Arguments of an interactive shell (e.g. `--norc`). Not used when a command is given.'),
  term: stringValue('The terminal type, set as `TERM`.', 'xterm-256color'),
  cols: Schema.natural().min(1).default(160).description('Columns of a new terminal.'),
  rows: Schema.natural().min(1).default(40).description('Rows of a new terminal.'),
  bufferBytes: Schema.natural()
    .min(1)
    .default(1024 * 1024)
    .description(
      'Output kept per terminal, in bytes, once as plain text and once raw; older output is dropped and counted.',
    ),
  maxPerSession: Schema.natural()
    .min(1)
    .default(8)
    .description(
      'Terminals one session may hold, running or exited. When full, the oldest exited one makes room; if none has exited, creating fails.',
    ),
  killGraceMs: Schema.natural()
    .default(2_000)
    .description("After SIGHUP and SIGTERM, how long a terminal's processes have before SIGKILL."),
  env: Schema.dict(Schema.string())
    .default({ PAGER: 'cat', GIT_PAGER: 'cat' })
    .description('Variables set in every terminal, on top of the scrubbed environment.'),
})

type Notice = 'data' | 'exit'

/** One running (or exited) terminal and its buffers. */
class Terminal {
  readonly plain: OutputBuffer
  readonly raw: OutputBuffer
  readonly stripper = new AnsiStripper()
  readonly listeners = new Set<(notice: Notice) => void>()
  readonly startedAt = Date.now()
  exited?: TerminalExit
  /** Resolves once the process has exited and its output has been drained. */
  readonly exit: Promise<void>
  /** Set when the terminal is being stopped (killed, evicted or shut down). */
  stopping?: Promise<void>
  private markExit!: () => void
  /** Our own descriptor of the PTY's secondary side; see `holdSecondary`. */
  private secondary: number | undefined

  constructor(
    readonly id: TerminalId,
    readonly sessionId: string,
    readonly command: string,
    readonly cwd: string,
    readonly proc: pty.IPty,
    public cols: number,
    public rows: number,
    bufferBytes: number,
  ) {
    this.plain = new OutputBuffer(bufferBytes)
    this.raw = new OutputBuffer(bufferBytes)
    this.exit = new Promise<void>((resolve) => (this.markExit = resolve))
    this.secondary = holdSecondary(proc)
  }

  get pid(): number {
    return this.proc.pid
  }

  output(data: string): void {
    this.raw.push(data)
    this.plain.push(this.stripper.push(data))
    this.notify('data')
  }

  finish(exit: TerminalExit): void {
    this.releaseSecondary()
    if (this.exited) return
    this.exited = exit
    this.markExit()
    this.notify('exit')
  }

  info(): TerminalInfo {
    const info: TerminalInfo = {
      id: this.id,
      sessionId: this.sessionId,
      command: this.command,
      cwd: this.cwd,
      pid: this.pid,
      cols: this.cols,
      rows: this.rows,
      startedAt: this.startedAt,
      offset: this.plain.offset,
    }
    if (this.exited) info.exited = { ...this.exited }
    return info
  }

  releaseSecondary(): void {
    if (this.secondary === undefined) return
    try {
      closeSync(this.secondary)
    } catch {
      // Already closed.
    }
    this.secondary = undefined
  }

  private notify(notice: Notice): void {
    for (const listener of [...this.listeners]) listener(notice)
  }
}

/**
 * The local provider of `ctx.terminals`: each terminal is a node-pty pseudo
 * terminal whose process leads a session of its own; killing a terminal
 * stops every process of that session. Disposal stops every terminal and
 * waits until their processes are gone.
 */
export class LocalTerminals extends Terminals {
  static Config = Config
  static inject = ['subprocess']

  private readonly settings: LocalTerminalsConfig
  private readonly terminals = new Map<TerminalId, Terminal>()
  /** Background stops (processes left behind by an exited shell, evicted terminals); shutdown waits for them. */
  private readonly stopping = new Set<Promise<unknown>>()
  private closed = false
  private readonly logger = this.home.logger('terminals')

  constructor(ctx: Context, config: LocalTerminalsConfig) {
    super(ctx)
    this.settings = config
    ctx.effect(() => () => this.shutdown(), 'terminals')
    // A session's terminals end with it, not only with dsh.
    ctx.on('session/closed', (session) => this.killSession(session.id))
  }

  async create(options: CreateTerminalOptions): Promise<TerminalId> {
    this.checkOpen()
    const { sessionId, cwd, command } = options ?? ({} as CreateTerminalOptions)
    if (typeof sessionId !== 'string' || sessionId === '')
      throw new TerminalError('SPAWN_FAILED', 'a terminal needs the id of the session it belongs to')
    if (typeof cwd !== 'string' || !isAbsolute(cwd))
      throw new TerminalError(
        'SPAWN_FAILED',
        `the working directory must be an absolute path, got ${JSON.stringify(cwd)}`,
      )
    if (command !== undefined && (typeof command !== 'string' || command.trim() === '')) {
      throw new TerminalError('SPAWN_FAILED', 'the command is empty; leave it out to start an interactive shell')
    }
    const cols = options.cols ?? this.settings.cols
    const rows = options.rows ?? this.settings.rows
    const badSize = sizeProblem(cols, rows)
    if (badSize) throw new TerminalError('SPAWN_FAILED', badSize)
    const info = await stat(cwd).catch(() => undefined)
    if (!info?.isDirectory())
      throw new TerminalError('SPAWN_FAILED', `the working directory ${cwd} does not exist or is not a directory`)
    this.checkOpen()
    this.makeRoom(sessionId)

    const shell = this.settings.shell || process.env.SHELL || 'bash'
    const args = command === undefined ? this.settings.shellArgs : ['-c', command]
    const env = { ...withoutSize(this.home.subprocess.environment()), ...this.settings.env, ...options.env }
    const [program, ...argv] = await this.reaped([shell, ...args], cwd)
    let proc: pty.IPty
    try {
      proc = pty.spawn(program as string, argv, { name: this.settings.term, cols, rows, cwd, env })
    } catch (error) {
      throw new TerminalError(
        'SPAWN_FAILED',
        `could not start ${shell}: ${error instanceof Error ? error.message : String(error)}`,
      )
    }
    const id = this.newId()
    const terminal = new Terminal(id, sessionId, command ?? shell, cwd, proc, cols, rows, this.settings.bufferBytes)
    proc.onData((data) => terminal.output(data))
    proc.onExit(({ exitCode, signal }) => {
      const name = signalName(signal)
      terminal.finish(name ? { code: null, signal: name } : { code: exitCode, signal: null })
      // Background jobs may outlive the shell; the terminal's processes go with it.
      if (!terminal.stopping) this.track(this.stop(terminal))
    })
    this.terminals.set(id, terminal)
    return id
  }

  /**
   * Terminals run unconfined, but with a sandbox service at hand inside a
   * private PID namespace (sandbox mode `off`), so that nothing started in
   * them, `nohup setsid … &` included, outlives the terminal.
   */
  private async reaped(argv: string[], cwd: string): Promise<string[]> {
    const sandbox = this.home.get('sandbox')
    if (!sandbox) return argv
    const wrapped = await sandbox.wrap(argv, unconfinedPolicy(), cwd, { interactive: true })
    return 'argv' in wrapped ? wrapped.argv : argv
  }

  write(id: TerminalId, data: string): void {
    const terminal = this.live(id)
    if (typeof data !== 'string') throw new TypeError('terminal input must be a string')
    terminal.proc.write(data)
  }

  read(id: TerminalId, options: ReadOptions = {}): TerminalOutput {
    const terminal = this.must(id)
    return withExit(terminal.plain.read(options.since ?? 0), terminal)
  }

  readRaw(id: TerminalId, options: ReadOptions = {}): TerminalOutput {
    const terminal = this.must(id)
    return withExit(terminal.raw.read(options.since ?? 0), terminal)
  }

  resize(id: TerminalId, cols: number, rows: number): void {
    const terminal = this.live(id)
    const badSize = sizeProblem(cols, rows)
    if (badSize) throw new RangeError(badSize)
    terminal.proc.resize(cols, rows)
    terminal.cols = cols
    terminal.rows = rows
  }

  waitFor(id: TerminalId, options: WaitOptions): Promise<WaitResult> {
    const terminal = this.must(id)
    const { timeoutMs, idleMs, signal } = options
    if (!(Number.isFinite(timeoutMs) && timeoutMs >= 0))
      throw new RangeError(`timeoutMs must be a non-negative number, got ${timeoutMs}`)
    if (idleMs !== undefined && !(Number.isFinite(idleMs) && idleMs >= 0))
      throw new RangeError(`idleMs must be a non-negative number, got ${idleMs}`)
    const since = options.since ?? terminal.plain.offset
    const pattern = options.pattern
      ? new RegExp(options.pattern.source, options.pattern.flags.replace(/[gy]/g, ''))
      : undefined
    if (signal?.aborted) return Promise.reject(signal.reason)

    return new Promise<WaitResult>((resolve, reject) => {
      let settled = false
      let idleTimer: NodeJS.Timeout | undefined
      let timeoutTimer: NodeJS.Timeout | undefined
      let scheduled: NodeJS.Immediate | undefined
      const cleanup = () => {
        settled = true
        clearTimeout(idleTimer)
        clearTimeout(timeoutTimer)
        if (scheduled) clearImmediate(scheduled)
        terminal.listeners.delete(listener)
        signal?.removeEventListener('abort', onAbort)
      }
      const finish = (reason: WaitResult['reason'], match?: RegExpExecArray) => {
        if (settled) return
        cleanup()
        const result: WaitResult = { reason, offset: terminal.plain.offset }
        if (match) result.match = match
        if (terminal.exited) result.exited = { ...terminal.exited }
        resolve(result)
      }
      // Looks for the pattern in everything after `since`, then for an exit.
      const check = () => {
        scheduled = undefined
        if (settled) return
        if (pattern) {
          const match = pattern.exec(terminal.plain.read(since).text)
          if (match) return finish('pattern', match)
        }
        if (terminal.exited) finish('exit')
      }
      const startIdle = () => {
        if (idleMs === undefined) return
        clearTimeout(idleTimer)
        idleTimer = setTimeout(() => finish('idle'), idleMs)
      }
      const listener = (notice: Notice) => {
        if (notice === 'exit') {
          if (scheduled) clearImmediate(scheduled)
          check()
          return
        }
        startIdle()
        // A burst of output is searched once, not once per chunk.
        if (pattern && !scheduled) scheduled = setImmediate(check)
      }
      const onAbort = () => {
        if (settled) return
        cleanup()
        reject(signal?.reason)
      }

      check()
      if (settled) return
      terminal.listeners.add(listener)
      signal?.addEventListener('abort', onAbort, { once: true })
      startIdle()
      timeoutTimer = setTimeout(() => finish('timeout'), timeoutMs)
    })
  }

  async kill(id: TerminalId): Promise<void> {
    const terminal = this.must(id)
    await this.stop(terminal)
    if (this.terminals.get(id) === terminal) this.terminals.delete(id)
  }

  list(sessionId: string): TerminalInfo[] {
    return [...this.terminals.values()]
      .filter((terminal) => terminal.sessionId === sessionId)
      .map((terminal) => terminal.info())
  }

  get(id: TerminalId): TerminalInfo | undefined {
    return this.terminals.get(id)?.info()
  }

  async killSession(sessionId: string): Promise<void> {
    const mine = [...this.terminals.values()].filter((terminal) => terminal.sessionId === sessionId)
    await Promise.all(mine.map((terminal) => this.kill(terminal.id).catch(() => {})))
  }

  private must(id: TerminalId): Terminal {
    const terminal = this.terminals.get(id)
    if (!terminal) throw new TerminalError('NOT_FOUND', `no terminal ${JSON.stringify(id)}`)
    return terminal
  }

  private live(id: TerminalId): Terminal {
    const terminal = this.must(id)
    if (terminal.exited)
      throw new TerminalError(
        'EXITED',
        `terminal ${id} has exited (${describeExit(terminal.exited)}) and takes no more input`,
      )
    if (terminal.stopping) throw new TerminalError('EXITED', `terminal ${id} is being killed and takes no more input`)
    return terminal
  }

  private checkOpen(): void {
    if (this.closed) throw new TerminalError('CLOSED', 'the terminals service is shutting down')
  }

  /** At the limit, forgets the session's oldest exited terminal; with none exited, refuses. */
  private makeRoom(sessionId: string): void {
    const mine = [...this.terminals.values()].filter((terminal) => terminal.sessionId === sessionId)
    if (mine.length < this.settings.maxPerSession) return
    const evictable = mine.find((terminal) => terminal.exited)
    if (!evictable) {
      throw new TerminalError(
        'LIMIT',
        `this session already has ${mine.length} running terminals, the most allowed (${this.settings.maxPerSession}); kill one first`,
      )
    }
    this.terminals.delete(evictable.id)
    this.track(this.stop(evictable))
  }

  private newId(): TerminalId {
    for (;;) {
      const id = `term-${randomBytes(4).toString('hex')}` as TerminalId
      if (!this.terminals.has(id)) return id
    }
  }

  /** Stops the terminal's process session and waits for its exit; idempotent. */
  private stop(terminal: Terminal): Promise<void> {
    terminal.stopping ??= (async () => {
      const gone = await killSession(terminal.pid, this.settings.killGraceMs)
      if (!gone) this.logger.warn('processes of terminal %s (session %d) survived SIGKILL', terminal.id, terminal.pid)
      // node-pty reports the exit once the PTY has drained, a moment after the last process is gone.
      let timer: NodeJS.Timeout | undefined
      await Promise.race([
        terminal.exit,
        new Promise<void>((resolve) => (timer = setTimeout(resolve, this.settings.killGraceMs + 2_000))),
      ])
      clearTimeout(timer)
      terminal.releaseSecondary()
      if (!terminal.exited) {
        this.logger.warn('terminal %s reported no exit after its processes were stopped', terminal.id)
        terminal.finish({ code: null, signal: null })
        try {
          terminal.proc.kill('SIGKILL')
        } catch {
          // Already gone.
        }
      }
    })()
    return terminal.stopping
  }

  private track(work: Promise<unknown>): void {
    const tracked = work.catch((error: unknown) => this.logger.warn('stopping a terminal failed: %s', error))
    this.stopping.add(tracked)
    void tracked.finally(() => this.stopping.delete(tracked))
  }

  private async shutdown(): Promise<void> {
    this.closed = true
    const all = [...this.terminals.values()]
    await Promise.allSettled(all.map((terminal) => this.stop(terminal)))
    this.terminals.clear()
    while (this.stopping.size > 0) await Promise.allSettled([...this.stopping])
  }
}

function withExit(slice: { text: string; offset: number; dropped: number }, terminal: Terminal): TerminalOutput {
  const output: TerminalOutput = { ...slice }
  if (terminal.exited) output.exited = { ...terminal.exited }
  return output
}

/**
 * Opens the secondary (slave) side of the PTY and keeps it open until the
 * terminal has exited. Without it, the kernel may report end-of-file on the
 * primary side as soon as the last process closes the secondary side, while
 * the tail of the output is still on its way: a command that writes more than
 * the PTY holds (about 4 KiB) and exits would lose its last lines. With our
 * descriptor open, node-pty reads until its own drain timeout after the exit.
 * Best effort: without a name for the secondary side (not Linux, or the
 * process already gone) nothing is held.
 */
function holdSecondary(proc: pty.IPty): number | undefined {
  const name = (proc as unknown as { ptsName?: unknown }).ptsName
  if (typeof name !== 'string' || !name.startsWith('/dev/')) return undefined
  try {
    return openSync(name, constants.O_RDWR | constants.O_NOCTTY)
  } catch {
    return undefined
  }
}

/** Why a terminal size is unusable, or undefined when it is fine. */
function sizeProblem(cols: number, rows: number): string | undefined {
  for (const [name, value] of [
    ['cols', cols],
    ['rows', rows],
  ] as const) {
    if (!(Number.isInteger(value) && value > 0 && value <= 10_000))
      return `${name} must be a whole number from 1 to 10000, got ${value}`
  }
  return undefined
}
