import { type ChildProcess, spawn } from 'node:child_process'
import path from 'node:path'
import {
  type ApprovalRequestParams,
  type ApprovalResult,
  type ClientMethod,
  type CommandSummary,
  ConnectionClosedError,
  type Delta,
  ErrorCodes,
  type InitializeResult,
  JsonRpcPeer,
  type ParamsOf,
  PROTOCOL_VERSION,
  type PromptContent,
  type PromptResult,
  parseParams,
  type QuestionAskParams,
  type QuestionAskResult,
  type ResultOf,
  RpcError,
  type SessionListParams,
  type SessionListResult,
  type SessionSettings,
  schemas,
  type UsageReport,
  type WireEvent,
} from '@dsh/sdk-protocol'
import { AsyncQueue } from './queue.ts'

/** One item of a session's live stream: a durable event, a streamed piece of a reply, or a status change. */
export type SessionUpdate =
  | { type: 'event'; event: WireEvent }
  | ({ type: 'delta' } & Delta)
  | { type: 'status'; status: 'running' | 'idle' }
  /** A prompt (its request id) waits behind the session's running work; `position` 1 runs next. */
  | { type: 'queued'; id: string | number; position: number }

export interface ClientOptions {
  clientInfo?: { name: string; version?: string }
  /** Answers tool approvals; without it the server denies calls outside the preset, as headless does. */
  onApproval?: (request: ApprovalRequestParams, signal: AbortSignal) => ApprovalResult | Promise<ApprovalResult>
  /** Answers the model's questions to the user; without it the model is told nobody can answer. */
  onQuestion?: (request: QuestionAskParams, signal: AbortSignal) => QuestionAskResult | Promise<QuestionAskResult>
  /** Gives up on a request after this long (milliseconds). Default: wait as long as it takes. */
  requestTimeoutMs?: number
  /** How long `close()` waits for the answer to `shutdown` (milliseconds). Default 5000. */
  shutdownTimeoutMs?: number
}

export interface SpawnOptions extends ClientOptions {
  /** The program to run. Default `dsh`. */
  command?: string
  /** Its arguments. Default `['--profile', profile]`. */
  args?: string[]
  /** Default `sdk`; `sdk-minimal` is the small tree. */
  profile?: string
  cwd?: string
  /** The child's whole environment. Default: this process's. */
  env?: NodeJS.ProcessEnv
  /** Sees what the server writes to stderr (its logs). */
  onStderr?: (text: string) => void
  /** After `shutdown`, how long to wait for the process to exit before SIGTERM, then SIGKILL (milliseconds). Default 5000. */
  exitTimeoutMs?: number
}

export interface AttachOptions extends ClientOptions {
  /** What the server writes (its stdout). */
  input: NodeJS.ReadableStream
  /** Where the server reads (its stdin). */
  output: NodeJS.WritableStream
}

/** A prompt that did not complete: cancelled, failed, or cut at the token limit. `result` says which. */
export class RunError extends Error {
  override name = 'RunError'
  constructor(readonly result: PromptResult) {
    super(
      result.error
        ? `the prompt ended with ${result.stopReason}: ${result.error.code}: ${result.error.message}`
        : `the prompt ended with ${result.stopReason}`,
    )
  }
}

const STDERR_TAIL = 8 * 1024

/**
 * A client of the dsh SDK protocol. `DshClient.spawn()` starts
 * `dsh --profile sdk` and talks to it over its stdin and stdout;
 * `DshClient.attach()` talks over streams you already have.
 */
export class DshClient {
  /** What `initialize` answered: server, models, granted capabilities. */
  server!: InitializeResult
  private readonly streams = new Map<string, Set<AsyncQueue<SessionUpdate>>>()
  private closing: Promise<void> | undefined
  private readonly peer: JsonRpcPeer

  private constructor(
    private readonly options: ClientOptions,
    io: { input: NodeJS.ReadableStream; output: NodeJS.WritableStream; ownsInputEnd: boolean },
    private readonly stopTransport: () => Promise<void>,
    /** Where new sessions work unless told otherwise. */
    private readonly defaultCwd: string,
  ) {
    this.peer = new JsonRpcPeer({
      input: io.input,
      output: io.output,
      onRequest: (method, params, { signal }) => this.answer(method, params, signal),
      onNotification: (method, params) => this.route(method, params),
      ...(io.ownsInputEnd ? { onInputEnd: () => {} } : {}),
    })
  }

  /** Starts `dsh --profile sdk` (or `options.command`) and initializes it. */
  static async spawn(options: SpawnOptions = {}): Promise<DshClient> {
    const command = options.command ?? 'dsh'
    const child = spawn(command, options.args ?? ['--profile', options.profile ?? 'sdk'], {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    let stderr = ''
    child.stderr?.setEncoding('utf8').on('data', (text: string) => {
      stderr = (stderr + text).slice(-STDERR_TAIL)
      options.onStderr?.(text)
    })
    // A program that cannot start emits 'error' and may never emit 'close'.
    const exited = new Promise<void>((resolve) => {
      child.once('close', () => resolve())
      child.once('error', () => resolve())
    })
    const client = new DshClient(
      options,
      {
        input: child.stdout as NodeJS.ReadableStream,
        output: child.stdin as NodeJS.WritableStream,
        ownsInputEnd: true,
      },
      () => stopChild(child, exited, options.exitTimeoutMs ?? 5000),
      path.resolve(options.cwd ?? process.cwd()),
    )
    child.once('error', (error) => client.gone(new ConnectionClosedError(`could not run ${command}: ${error.message}`)))
    child.once('close', (code, signal) => {
      const how = signal ? `was killed by ${signal}` : `exited with code ${code}`
      client.gone(
        new ConnectionClosedError(`dsh ${how}${stderr.trim() ? `; its last output on stderr:\n${stderr.trim()}` : ''}`),
      )
    })
    return client.start()
  }

  /** Talks to a server over given streams (for example a socket, or an in-process server). */
  static async attach(options: AttachOptions): Promise<DshClient> {
    const client = new DshClient(
      options,
      { input: options.input, output: options.output, ownsInputEnd: false },
      async () => {
        options.output.end()
      },
      process.cwd(),
    )
    return client.start()
  }

  private async start(): Promise<this> {
    try {
      this.server = await this.request('initialize', {
        protocolVersion: PROTOCOL_VERSION,
        ...(this.options.clientInfo ? { clientInfo: this.options.clientInfo } : {}),
        capabilities: { approvals: !!this.options.onApproval, questions: !!this.options.onQuestion },
      })
      return this
    } catch (error) {
      await this.stopTransport()
      throw error
    }
  }

  /** Any method by name, with typed params and result. */
  async request<M extends ClientMethod>(method: M, params: ParamsOf<M>): Promise<ResultOf<M>> {
    const timeout = this.options.requestTimeoutMs
    return (await this.peer.request(method, params, timeout === undefined ? {} : { timeoutMs: timeout })) as ResultOf<M>
  }

  /** A handle on a session by id; sends nothing. */
  session(id: string): Session {
    return new Session(this, id)
  }

  /** A new session in `cwd` (default: the spawned server's folder, else this process's). */
  async newSession(params: Partial<ParamsOf<'session/new'>> = {}): Promise<Session> {
    const { sessionId } = await this.request('session/new', { ...params, cwd: params.cwd ?? this.defaultCwd })
    return this.session(sessionId)
  }

  /** Opens a stored session to continue it. */
  async resumeSession(sessionId: string): Promise<Session> {
    return this.session((await this.request('session/resume', { sessionId })).sessionId)
  }

  /** A new session holding `sessionId`'s events up to the end of `turn` (default: all). */
  async forkSession(sessionId: string, turn?: number): Promise<Session> {
    return this.session(
      (await this.request('session/fork', { sessionId, ...(turn === undefined ? {} : { turn }) })).sessionId,
    )
  }

  listSessions(params: SessionListParams = {}): Promise<SessionListResult> {
    return this.request('session/list', params)
  }

  /**
   * Sends a prompt and resolves when its turn ends, however it ended. On a
   * busy session it is queued (a `queued` update) and runs after the work ahead.
   */
  prompt(sessionId: string, content: PromptContent): Promise<PromptResult> {
    return this.request('session/prompt', { sessionId, content })
  }

  /** Adds a message to the session's running turn, delivered with its next step; refused when no turn runs. */
  async steer(sessionId: string, content: PromptContent): Promise<void> {
    await this.request('session/steer', { sessionId, content })
  }

  /**
   * Changes a session's model, reasoning effort, permission preset, network
   * or plan mode (each optional); the change is logged and holds after resume.
   * Resolves with the settings the session now has.
   */
  configure(sessionId: string, settings: Omit<ParamsOf<'session/configure'>, 'sessionId'>): Promise<SessionSettings> {
    return this.request('session/configure', { ...settings, sessionId })
  }

  /** Stops the running turn; its `prompt` resolves with `cancelled`. */
  async cancel(sessionId: string): Promise<void> {
    await this.request('session/cancel', { sessionId })
  }

  /** The session's stored log, after `afterSeq` when given. */
  async readEvents(sessionId: string, afterSeq?: number): Promise<WireEvent[]> {
    return (await this.request('session/events', { sessionId, ...(afterSeq === undefined ? {} : { afterSeq }) })).events
  }

  /** What the session can call as `/name args` in a prompt: prompt-file commands and skills. */
  async commands(sessionId: string): Promise<CommandSummary[]> {
    return (await this.request('session/commands', { sessionId })).commands
  }

  /** Tokens, cost per turn and in all, and context use of the session (open or stored). */
  usage(sessionId: string): Promise<UsageReport> {
    return this.request('session/usage', { sessionId })
  }

  /**
   * Forks the session before one of its user messages and, with `restoreFiles`,
   * puts the workspace's files back as they were then (`dryRun` only reports).
   */
  rewind(
    sessionId: string,
    options: Omit<ParamsOf<'session/rewind'>, 'sessionId'>,
  ): Promise<ResultOf<'session/rewind'>> {
    return this.request('session/rewind', { sessionId, ...options })
  }

  /** Stops the session's agent and saves it; its event streams end. */
  async closeSession(sessionId: string): Promise<void> {
    await this.request('session/close', { sessionId })
    this.endStreams(sessionId)
  }

  /**
   * The live updates of a session from now on: events, deltas and status.
   * It ends when the session is closed through this client or the client closes;
   * `break` out of the loop to stop listening earlier.
   */
  events(sessionId: string): AsyncIterableIterator<SessionUpdate> {
    const queues = this.streams.get(sessionId) ?? new Set()
    this.streams.set(sessionId, queues)
    const queue: AsyncQueue<SessionUpdate> = new AsyncQueue(() => queues.delete(queue))
    if (this.closing) queue.end()
    else queues.add(queue)
    return queue
  }

  /**
   * Runs a prompt and resolves with the final text. Without `sessionId` it
   * starts a new session in `cwd`. Rejects with `RunError` unless the turn
   * completed.
   */
  async run(prompt: PromptContent, options: { sessionId?: string; cwd?: string } = {}): Promise<string> {
    const sessionId = options.sessionId ?? (await this.newSession(options.cwd ? { cwd: options.cwd } : {})).id
    const result = await this.prompt(sessionId, prompt)
    if (result.stopReason !== 'completed') throw new RunError(result)
    return result.text
  }

  /** Asks the server to save and stop, then ends the connection (and the process it spawned). Safe to call twice. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      try {
        await this.peer.request('shutdown', {}, { timeoutMs: this.options.shutdownTimeoutMs ?? 5000 })
      } catch {
        // Gone already, or too slow: the transport is stopped below either way.
      }
      await this.stopTransport()
      this.gone(new ConnectionClosedError('the client was closed'))
    })()
    return this.closing
  }

  private gone(reason: Error): void {
    this.peer.close(reason)
    for (const id of [...this.streams.keys()]) this.endStreams(id)
  }

  private endStreams(sessionId: string): void {
    for (const queue of this.streams.get(sessionId) ?? []) queue.end()
    this.streams.delete(sessionId)
  }

  private route(method: string, params: unknown): void {
    const p = params as { sessionId?: string } & Record<string, unknown>
    const queues = p?.sessionId ? this.streams.get(p.sessionId) : undefined
    if (!queues?.size) return
    let update: SessionUpdate
    if (method === 'session/event') update = { type: 'event', event: p.event as WireEvent }
    else if (method === 'session/status') update = { type: 'status', status: p.status as 'running' | 'idle' }
    else if (method === 'session/queued')
      update = { type: 'queued', id: p.id as string | number, position: p.position as number }
    else if (method === 'session/delta') {
      const { sessionId: _id, ...delta } = p
      update = { type: 'delta', ...(delta as Omit<Extract<SessionUpdate, { type: 'delta' }>, 'type'>) }
    } else return
    for (const queue of queues) queue.push(update)
  }

  private async answer(method: string, params: unknown, signal: AbortSignal): Promise<unknown> {
    if (method === 'approval/request' && this.options.onApproval) {
      return this.options.onApproval(parseParams(method, schemas.ApprovalRequestParams, params), signal)
    }
    if (method === 'question/ask' && this.options.onQuestion) {
      return this.options.onQuestion(parseParams(method, schemas.QuestionAskParams, params), signal)
    }
    throw new RpcError(ErrorCodes.MethodNotFound, `this client does not answer ${method}`)
  }
}

/** A session of a client: the client's methods with the session id filled in. */
export class Session {
  constructor(
    readonly client: DshClient,
    readonly id: string,
  ) {}

  prompt(content: PromptContent): Promise<PromptResult> {
    return this.client.prompt(this.id, content)
  }

  run(prompt: PromptContent): Promise<string> {
    return this.client.run(prompt, { sessionId: this.id })
  }

  steer(content: PromptContent): Promise<void> {
    return this.client.steer(this.id, content)
  }

  configure(settings: Omit<ParamsOf<'session/configure'>, 'sessionId'>): Promise<SessionSettings> {
    return this.client.configure(this.id, settings)
  }

  cancel(): Promise<void> {
    return this.client.cancel(this.id)
  }

  events(): AsyncIterableIterator<SessionUpdate> {
    return this.client.events(this.id)
  }

  readEvents(afterSeq?: number): Promise<WireEvent[]> {
    return this.client.readEvents(this.id, afterSeq)
  }

  commands(): Promise<CommandSummary[]> {
    return this.client.commands(this.id)
  }

  fork(turn?: number): Promise<Session> {
    return this.client.forkSession(this.id, turn)
  }

  usage(): Promise<UsageReport> {
    return this.client.usage(this.id)
  }

  close(): Promise<void> {
    return this.client.closeSession(this.id)
  }
}

/** Ends the child's stdin, then escalates to SIGTERM and SIGKILL until it has exited. */
async function stopChild(child: ChildProcess, exited: Promise<void>, graceMs: number): Promise<void> {
  const within = (ms: number) =>
    Promise.race([exited.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms).unref())])
  if (child.exitCode !== null || child.signalCode !== null) return
  child.stdin?.end()
  if (await within(graceMs)) return
  child.kill('SIGTERM')
  if (await within(graceMs)) return
  child.kill('SIGKILL')
  await exited
}
