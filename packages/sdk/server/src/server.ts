import type {} from '@dsh/cmdline'
import type {} from '@dsh/checkpoints'
import { type CompactOutcome, ConversationError, type ConversationSummary } from '@dsh/conversations'
import { assertNever, type Context } from '@dsh/cordis'
import { noUsage } from '@dsh/llm'
import {
  type ClientMethod,
  ClientMethods,
  ErrorCodes,
  invalidField,
  JsonRpcPeer,
  PROTOCOL_VERSION,
  type RequestContext,
  type PromptResult,
  parseParams,
  type ResultOf,
  RpcError,
  type SessionSummary,
  schemas,
} from '@dsh/sdk-protocol'
import type { z } from 'zod'
import manifest from '../package.json' with { type: 'json' }
import type { SdkServerConfig } from './config.ts'
import { promptBytes, promptText, turnResult, userMessage } from './turns.ts'

export interface SdkStreams {
  /** Where requests arrive (stdin). */
  input: NodeJS.ReadableStream
  /** Where answers and notifications go (stdout). */
  output: NodeJS.WritableStream
}

interface LoaderLike {
  settle(timeoutMs: number): Promise<unknown>
}

type Params<M extends ClientMethod> = z.output<(typeof ClientMethods)[M]['params']>
type Handlers = { [M in ClientMethod]: (params: Params<M>, request?: RequestContext) => Promise<ResultOf<M>> }

const NOT_OPEN = ' (not open here: session/new creates one, session/resume opens a stored one)'

const summary = (s: ConversationSummary): SessionSummary => ({
  sessionId: s.sessionId,
  title: s.title ?? null,
  cwd: s.cwd,
  createdAt: s.createdAt,
  updatedAt: s.updatedAt,
  ...(s.parentSession ? { parentSession: s.parentSession } : {}),
  ...(s.forkedFrom ? { forkedFrom: s.forkedFrom } : {}),
})

/** The SDK's name of a service argument, where a method names it otherwise. */
const FIELDS: Record<string, Record<string, string>> = {
  'session/new': { preset: 'permissionPreset' },
  'session/configure': { plan: 'planMode' },
}

/** A conversation service error as the JSON-RPC error of `method`. */
function rpcError(method: string, error: unknown): unknown {
  if (!(error instanceof ConversationError)) return error
  const { sessionId, field } = error.details
  switch (error.kind) {
    case 'not-found':
      return new RpcError(ErrorCodes.UnknownSession, error.message, { sessionId })
    case 'busy':
      return new RpcError(ErrorCodes.SessionBusy, error.message, { sessionId })
    case 'invalid':
    case 'unavailable':
      if (field) return invalidField(method, FIELDS[method]?.[field] ?? field, error.message)
      return new RpcError(ErrorCodes.InvalidParams, `${method}: ${error.message}`)
    default:
      return assertNever(error.kind)
  }
}
const describe = (error: unknown) => (error instanceof Error ? error.message : String(error))

/**
 * The SDK protocol on one pair of streams: JSON-RPC requests in, answers and
 * notifications out. Sessions are the agents of `ctx.agents`; approvals and
 * questions go to the client when it declared it can answer them.
 */
export class SdkServer {
  private readonly peer: JsonRpcPeer
  private readonly logger: ReturnType<Context['logger']>
  private initialized = false
  private initializing = false
  private closing: Promise<void> | undefined
  /** Requests being handled, but `shutdown`: stopping waits for them to answer. */
  private readonly inflight = new Set<Promise<unknown>>()
  private readonly granted = { approvals: false, questions: false }

  constructor(
    private readonly ctx: Context,
    private readonly config: SdkServerConfig,
    streams: SdkStreams,
    /** Called once the server has stopped because input ended or `shutdown` was answered. */
    private readonly onStopped: () => void,
  ) {
    this.logger = ctx.logger('sdk-server')
    this.peer = new JsonRpcPeer({
      input: streams.input,
      output: streams.output,
      maxLineBytes: config.maxLineBytes,
      onRequest: (method, params, request) => this.dispatch(method, params, request),
      onNotification: (method, params) => {
        this.dispatch(method, params).catch((error) =>
          this.logger.warn('notification %s failed: %s', method, describe(error)),
        )
      },
      onInputEnd: () => {
        this.peer.close()
        void this.stop().then(this.onStopped)
      },
      log: (message) => this.logger.warn(message),
    })
    const notify = (method: string, params: object) => {
      if (this.initialized) this.peer.notify(method, params)
    }
    ctx.on('session/published', (session, event) => notify('session/event', { sessionId: session.id, event }))
    ctx.on('agent/delta', (agent, d) =>
      notify('session/delta', {
        sessionId: agent.id,
        turn: d.turn,
        step: d.step,
        index: d.index,
        kind: d.kind,
        delta: d.delta,
      }),
    )
    ctx.on('agent/status', (agent, status) => notify('session/status', { sessionId: agent.id, status }))
    ctx.effect(() => () => this.peer.close(), 'sdk connection')
  }

  private async dispatch(method: string, params: unknown, request?: RequestContext): Promise<unknown> {
    if (!Object.hasOwn(ClientMethods, method))
      throw new RpcError(ErrorCodes.MethodNotFound, `unknown method: ${method}`)
    const name = method as ClientMethod
    if (this.closing && name !== 'shutdown') throw new RpcError(ErrorCodes.ShuttingDown, 'the server is shutting down')
    if (!this.initialized && name !== 'initialize' && name !== 'shutdown') {
      throw new RpcError(ErrorCodes.NotInitialized, `${name}: call initialize first`)
    }
    const parsed = parseParams(name, ClientMethods[name].params, params)
    const handler = this.handlers[name] as (p: unknown, r?: RequestContext) => Promise<unknown>
    const run = handler(parsed, request).catch((error: unknown) => {
      throw rpcError(name, error)
    })
    if (name === 'shutdown') return run
    this.inflight.add(run)
    return run.finally(() => this.inflight.delete(run))
  }

  private readonly handlers: Handlers = {
    initialize: (p) => this.initialize(p),
    'session/new': async (p) => {
      const agent = await this.conversations.create({
        cwd: p.cwd,
        ...(p.model ? { model: p.model } : {}),
        ...(p.permissionPreset ? { preset: p.permissionPreset } : {}),
        ...(p.network ? { network: p.network } : {}),
      })
      return { sessionId: agent.id }
    },
    'session/resume': async (p) => {
      const { problems } = await this.conversations.resume(p.sessionId)
      return problems.length ? { sessionId: p.sessionId, problems } : { sessionId: p.sessionId }
    },
    'session/fork': async (p) => ({
      sessionId: (await this.conversations.fork(p.sessionId, p.turn === undefined ? {} : { turn: p.turn })).id,
    }),
    'session/list': async (p) => {
      if (p.limit !== undefined && p.limit > this.config.maxListLimit)
        throw invalidField('session/list', 'limit', `must be at most ${this.config.maxListLimit}`)
      const page = await this.conversations.list({ ...p, limit: p.limit ?? this.config.listLimit })
      return { sessions: page.sessions.map(summary), ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) }
    },
    'session/prompt': (p, request) => this.prompt(p, request),
    'session/steer': async (p) => {
      this.conversations.steer(p.sessionId, this.message('session/steer', p.content))
      return {}
    },
    'session/configure': async ({ sessionId, model, reasoningEffort, preset, network, planMode }) => {
      await this.conversations.configure(sessionId, {
        ...(model ? { model } : {}),
        ...(reasoningEffort ? { reasoningEffort } : {}),
        ...(preset ? { preset } : {}),
        ...(network ? { network } : {}),
        ...(planMode !== undefined ? { plan: planMode } : {}),
      })
      return this.settings(sessionId)
    },
    'session/cancel': async (p) => {
      this.conversations.agent(p.sessionId, NOT_OPEN)
      await this.conversations.cancel(p.sessionId)
      return {}
    },
    'session/events': async (p) => ({ events: await this.conversations.events(p.sessionId, p.afterSeq) }),
    'session/usage': (p) => this.conversations.usage(p.sessionId),
    'session/close': async (p) => {
      await this.conversations.close(p.sessionId)
      return {}
    },
    'session/commands': async (p) => ({ commands: this.conversations.commands({ sessionId: p.sessionId }) }),
    'session/rewind': (p) => {
      const checkpoints = this.ctx.get('checkpoints')
      if (!checkpoints)
        throw new ConversationError('unavailable', 'rewind is not available: this profile has no checkpoints plugin')
      const { sessionId, ...options } = p
      return checkpoints.rewind(sessionId, options)
    },
    shutdown: async () => {
      await this.stop()
      setImmediate(this.onStopped)
      return {}
    },
  }

  /** What `session/configure` answers: the settings the session's next request uses. */
  private async settings(id: string): Promise<ResultOf<'session/configure'>> {
    const view = await this.conversations.show(id)
    return {
      model: view.model ?? this.ctx.agents.defaults().model,
      ...(view.reasoningEffort ? { reasoningEffort: view.reasoningEffort } : {}),
      ...(view.preset ? { preset: view.preset } : {}),
      ...(view.network ? { network: view.network } : {}),
      planMode: view.plan,
    }
  }

  private get conversations() {
    return this.ctx.conversations
  }

  private async initialize(p: Params<'initialize'>): Promise<ResultOf<'initialize'>> {
    if (this.initialized || this.initializing)
      throw new RpcError(ErrorCodes.AlreadyInitialized, 'initialize was already called')
    if (p.protocolVersion !== PROTOCOL_VERSION) {
      throw invalidField(
        'initialize',
        'protocolVersion',
        `this server speaks protocol version ${PROTOCOL_VERSION}, not ${p.protocolVersion}`,
      )
    }
    this.initializing = true
    await (this.ctx.get('loader') as LoaderLike | undefined)?.settle(this.config.settleTimeoutMs)
    if (p.capabilities?.approvals) this.granted.approvals = this.offer('approvals', () => this.takeApprovals())
    if (p.capabilities?.questions) this.granted.questions = this.offer('questions', () => this.takeQuestions())
    this.initialized = true
    const defaults = this.ctx.agents.defaults()
    return {
      protocolVersion: PROTOCOL_VERSION,
      serverInfo: { name: 'dsh', version: manifest.version },
      models: this.conversations.models(),
      defaultModel: defaults.model,
      capabilities: { ...this.granted },
    }
  }

  /** Takes a capability the client offered; false (and a warning) when this profile cannot use it. */
  private offer(what: string, take: () => boolean): boolean {
    try {
      return take()
    } catch (error) {
      this.logger.warn('the client offered %s, but they cannot be routed to it: %s', what, describe(error))
      return false
    }
  }

  private takeApprovals(): boolean {
    this.conversations.broker.setApprover(this.ctx, async (prompt, signal) => {
      const { sessionId, call, reason, preset } = prompt
      const params = {
        sessionId,
        toolCall: { callId: call.callId, name: call.name, arguments: call.arguments },
        preset: preset ?? null,
        reason,
      }
      const answer = await this.peer.request('approval/request', params, { signal })
      const parsed = schemas.ApprovalResult.safeParse(answer)
      if (!parsed.success)
        throw new Error(`the client answered approval/request with ${JSON.stringify(answer)}, not {decision, message?}`)
      return parsed.data
    })
    return true
  }

  private takeQuestions(): boolean {
    if (!this.ctx.get('questions')) return false
    this.conversations.broker.setAsker(this.ctx, async (request, signal) => {
      const answer = await this.peer.request(
        'question/ask',
        { sessionId: request.sessionId, callId: request.callId, questions: request.questions },
        { signal },
      )
      const parsed = schemas.QuestionAskResult.safeParse(answer)
      if (!parsed.success)
        throw new Error(
          `the client answered question/ask with ${JSON.stringify(answer)}, not {answers: [{question, selected, text?}]}`,
        )
      return parsed.data.answers
    })
    return true
  }

  /** The user message of a prompt or a steer; too big or empty is -32602 naming `content`. */
  private message(method: ClientMethod, content: Params<'session/prompt'>['content']) {
    const bytes = promptBytes(content)
    if (bytes > this.config.maxPromptBytes) {
      throw invalidField(
        method,
        'content',
        `the prompt is ${bytes} bytes, more than the limit of ${this.config.maxPromptBytes} (maxPromptBytes)`,
      )
    }
    const text = promptText(content)
    if (text !== undefined && text.trim() === '') throw invalidField(method, 'content', 'the prompt is empty')
    return userMessage(content)
  }

  /**
   * Runs a prompt's turn and answers when it ends. On a busy session it is
   * queued: `session/queued` says so at once, and the answer comes when its
   * own turn ends. `/compact` and `/plan` are commands, not turns.
   */
  private async prompt(p: Params<'session/prompt'>, request?: RequestContext): Promise<PromptResult> {
    const agent = this.conversations.agent(p.sessionId, NOT_OPEN)
    const message = this.message('session/prompt', p.content)
    const text = promptText(p.content)?.trim()
    if (text === '/compact') return this.compact(agent.id)
    if (text === '/plan' || text === '/plan off') return this.plan(agent.id, text === '/plan')
    const onQueued = (position: number) => {
      if (request) this.peer.notify('session/queued', { sessionId: agent.id, id: request.id, position })
    }
    const events = await this.conversations.prompt(agent.id, message, { onQueued })
    return turnResult(events, this.conversations.meter(events))
  }

  /** `/plan` and `/plan off`: `session/configure {planMode}`; the answer says what changed. */
  private async plan(id: string, on: boolean): Promise<PromptResult> {
    await this.handlers['session/configure']({ sessionId: id, planMode: on })
    const text = on
      ? 'Plan mode is on: only read-only tools run until you approve a plan (or send /plan off).'
      : "Plan mode is off: tools run under the session's permission preset again."
    return { stopReason: 'completed', text, usage: noUsage() }
  }

  /** `/compact`: the answer says what the compaction did. */
  private async compact(id: string): Promise<PromptResult> {
    const failed = (code: string, message: string): PromptResult => ({
      stopReason: 'error',
      text: message,
      usage: noUsage(),
      error: { code, message },
    })
    let outcome: CompactOutcome
    try {
      outcome = await this.conversations.compact(id)
    } catch (error) {
      if (error instanceof ConversationError && error.kind === 'unavailable') {
        return failed('COMPACTION_UNAVAILABLE', '/compact is not available: this profile has no compaction plugin')
      }
      throw error
    }
    if (outcome.error) return failed('COMPACTION_FAILED', `compaction failed: ${outcome.error}`)
    const text = outcome.compacted
      ? `Compacted the conversation: ${outcome.replaced} earlier messages were replaced by a summary.`
      : 'Nothing to compact: the conversation is already short.'
    return { stopReason: 'completed', text, usage: noUsage() }
  }

  /**
   * Stops taking work, cancels running turns, waits (bounded) for the
   * requests being handled to answer, then closes every session, which saves it.
   */
  private stop(): Promise<void> {
    this.closing ??= (async () => {
      for (const agent of this.ctx.agents.list()) agent.cancel('shutdown')
      let timer: NodeJS.Timeout | undefined
      const limit = new Promise((resolve) => (timer = setTimeout(resolve, this.config.drainTimeoutMs)))
      await Promise.race([Promise.allSettled([...this.inflight]), limit])
      clearTimeout(timer)
      await this.ctx.agents.disposeAll()
    })()
    return this.closing
  }
}
