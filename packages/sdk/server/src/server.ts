import { stat } from 'node:fs/promises'
import type { Agent, AgentOptions } from '@dsh/agent'
import type {} from '@dsh/cmdline'
import type {} from '@dsh/compaction'
import type { Context } from '@dsh/cordis'
import { noUsage } from '@dsh/llm'
import type {} from '@dsh/permission'
import type {} from '@dsh/questions'
import {
  type ClientMethod,
  ClientMethods,
  ErrorCodes,
  invalidField,
  JsonRpcPeer,
  type ModelSummary,
  PROTOCOL_VERSION,
  type PromptResult,
  parseParams,
  type ResultOf,
  RpcError,
  schemas,
} from '@dsh/sdk-protocol'
import type { Session, SessionId } from '@dsh/session'
import type { ApprovalAnswer, ToolApprover } from '@dsh/tools'
import type { z } from 'zod'
import manifest from '../package.json' with { type: 'json' }
import type { SdkServerConfig } from './config.ts'
import { detachedSession, listSessions, openStored } from './storage.ts'
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
type Handlers = { [M in ClientMethod]: (params: Params<M>) => Promise<ResultOf<M>> }

const unknownSession = (id: string, hint = '') => new RpcError(ErrorCodes.UnknownSession, `unknown session: ${id}${hint}`, { sessionId: id })
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
  /** Sessions running a prompt or a compaction for this client. */
  private readonly busy = new Set<string>()
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
      onRequest: (method, params) => this.dispatch(method, params),
      onNotification: (method, params) => {
        this.dispatch(method, params).catch((error) => this.logger.warn('notification %s failed: %s', method, describe(error)))
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
    ctx.on('agent/delta', (agent, d) => notify('session/delta', { sessionId: agent.id, turn: d.turn, step: d.step, index: d.index, kind: d.kind, delta: d.delta }))
    ctx.on('agent/status', (agent, status) => notify('session/status', { sessionId: agent.id, status }))
    ctx.effect(() => () => this.peer.close(), 'sdk connection')
  }

  private async dispatch(method: string, params: unknown): Promise<unknown> {
    if (!Object.hasOwn(ClientMethods, method)) throw new RpcError(ErrorCodes.MethodNotFound, `unknown method: ${method}`)
    const name = method as ClientMethod
    if (this.closing && name !== 'shutdown') throw new RpcError(ErrorCodes.ShuttingDown, 'the server is shutting down')
    if (!this.initialized && name !== 'initialize' && name !== 'shutdown') {
      throw new RpcError(ErrorCodes.NotInitialized, `${name}: call initialize first`)
    }
    const parsed = parseParams(name, ClientMethods[name].params, params)
    const run = (this.handlers[name] as (p: unknown) => Promise<unknown>)(parsed)
    if (name === 'shutdown') return run
    this.inflight.add(run)
    return run.finally(() => this.inflight.delete(run))
  }

  private readonly handlers: Handlers = {
    initialize: (p) => this.initialize(p),
    'session/new': (p) => this.newSession(p),
    'session/resume': (p) => this.resume(p.sessionId),
    'session/fork': (p) => this.fork(p.sessionId, p.turn),
    'session/list': async (p) => {
      if (p.limit !== undefined && p.limit > this.config.maxListLimit) throw invalidField('session/list', 'limit', `must be at most ${this.config.maxListLimit}`)
      return listSessions(this.ctx, { ...p, limit: p.limit ?? this.config.listLimit })
    },
    'session/prompt': (p) => this.prompt(p),
    'session/cancel': async (p) => {
      this.agentOf(p.sessionId).cancel('user')
      return {}
    },
    'session/events': async (p) => {
      const live = this.ctx.sessions.get(p.sessionId)
      const events = live ? this.ctx.sessions.publishedEvents(live) : (await openStored(this.ctx, p.sessionId))?.events
      if (!events) throw unknownSession(p.sessionId)
      const after = p.afterSeq ?? -1
      return { events: events.filter((e) => e.seq > after) }
    },
    'session/close': async (p) => {
      const agent = this.ctx.agents.get(p.sessionId)
      const session = this.ctx.sessions.get(p.sessionId)
      if (agent) await this.ctx.agents.dispose(agent)
      else if (session) await this.ctx.sessions.close(session)
      else if (!(await openStored(this.ctx, p.sessionId))) throw unknownSession(p.sessionId)
      return {}
    },
    shutdown: async () => {
      await this.stop()
      setImmediate(this.onStopped)
      return {}
    },
  }

  private async initialize(p: Params<'initialize'>): Promise<ResultOf<'initialize'>> {
    if (this.initialized || this.initializing) throw new RpcError(ErrorCodes.AlreadyInitialized, 'initialize was already called')
    if (p.protocolVersion !== PROTOCOL_VERSION) {
      throw invalidField('initialize', 'protocolVersion', `this server speaks protocol version ${PROTOCOL_VERSION}, not ${p.protocolVersion}`)
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
      models: this.models(),
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
    const approver: ToolApprover = async (call, reason, run) => {
      const permission = this.ctx.get('permission')
      const params = {
        sessionId: run.sessionId,
        toolCall: { callId: call.callId, name: call.name, arguments: call.arguments },
        preset: permission ? permission.preset(run.sessionId) : null,
        reason,
      }
      const answer = await this.peer.request('approval/request', params, { signal: run.signal })
      const parsed = schemas.ApprovalResult.safeParse(answer)
      if (!parsed.success) throw new Error(`the client answered approval/request with ${JSON.stringify(answer)}, not {decision, message?}`)
      const { decision, message } = parsed.data
      const result: ApprovalAnswer = decision === 'reject' ? { kind: 'reject', ...(message ? { message } : {}) } : decision
      return result
    }
    const permission = this.ctx.get('permission')
    if (permission) permission.setApprover(this.ctx, approver)
    else if (this.ctx.get('tools')) this.ctx.tools.setApprover(this.ctx, approver)
    else return false
    return true
  }

  private takeQuestions(): boolean {
    const questions = this.ctx.get('questions')
    if (!questions) return false
    questions.setAsker(this.ctx, async (request, signal) => {
      const answer = await this.peer.request('question/ask', { sessionId: request.sessionId, callId: request.callId, questions: request.questions }, { signal })
      const parsed = schemas.QuestionAskResult.safeParse(answer)
      if (!parsed.success) throw new Error(`the client answered question/ask with ${JSON.stringify(answer)}, not {answers: [{question, selected, text?}]}`)
      return parsed.data.answers
    })
    return true
  }

  private models(): ModelSummary[] {
    const llm = this.ctx.get('llm')
    if (!llm) return []
    return llm.listRoutes().flatMap((provider) =>
      llm.models(provider).map((m) => ({
        provider,
        id: m.id,
        contextWindow: m.contextWindow,
        ...(m.maxOutputTokens !== undefined ? { maxOutputTokens: m.maxOutputTokens } : {}),
        ...(m.images !== undefined ? { images: m.images } : {}),
      })),
    )
  }

  /** The route serving `model`: the default route when it lists the model, else the first that does. */
  private modelOptions(model: string): Partial<AgentOptions> {
    const models = this.models()
    const defaults = this.ctx.agents.defaults()
    if (models.length === 0) return { model }
    const match = models.find((m) => m.id === model && m.provider === defaults.provider) ?? models.find((m) => m.id === model)
    if (!match) throw invalidField('session/new', 'model', `unknown model "${model}"; this server offers ${[...new Set(models.map((m) => m.id))].join(', ')}`)
    return { provider: match.provider, model: match.id }
  }

  private async newSession(p: Params<'session/new'>): Promise<ResultOf<'session/new'>> {
    const folder = await stat(p.cwd).catch(() => undefined)
    if (!folder?.isDirectory()) throw invalidField('session/new', 'cwd', `${p.cwd} is not a folder`)
    const permission = this.ctx.get('permission')
    for (const field of ['permissionPreset', 'network'] as const) {
      if (p[field] && !permission) throw invalidField('session/new', field, `this profile has no permission service, so ${field} cannot be chosen`)
    }
    const options = p.model ? this.modelOptions(p.model) : {}
    const agent = await this.ctx.agents.create({ cwd: p.cwd, options })
    if (p.permissionPreset) permission?.setPreset(agent.id, p.permissionPreset)
    if (p.network) permission?.setNetwork(agent.id, p.network)
    return { sessionId: agent.id }
  }

  private async resume(id: string): Promise<ResultOf<'session/resume'>> {
    if (this.ctx.agents.get(id)) return { sessionId: id }
    let resumed: Awaited<ReturnType<Context['agents']['resume']>>
    try {
      resumed = await this.ctx.agents.resume(id as SessionId)
    } catch (error) {
      if (error instanceof Error && error.name === 'SessionNotFoundError') throw unknownSession(id)
      if (error instanceof Error && error.name === 'SessionBusyError') throw new RpcError(ErrorCodes.SessionBusy, error.message, { sessionId: id })
      throw error
    }
    return resumed.problems.length ? { sessionId: id, problems: resumed.problems } : { sessionId: id }
  }

  /**
   * A new session starting with the source's events up to the end of `turn`
   * (default: all of them). The copy is stored, then opened like a resume,
   * so its agent starts from what is on disk.
   */
  private async fork(id: string, turn: number | undefined): Promise<ResultOf<'session/fork'>> {
    let source: Session | undefined = this.ctx.sessions.get(id)
    if (!source) {
      const stored = await openStored(this.ctx, id)
      if (!stored) throw unknownSession(id)
      source = detachedSession(this.ctx, stored)
    }
    if (turn !== undefined && !source.events.some((e) => e.type === 'turn/end' && (e.data as { turn: number }).turn === turn)) {
      throw invalidField('session/fork', 'turn', `session ${id} has no finished turn ${turn}`)
    }
    if (turn === undefined && source.turnState().open) {
      throw new RpcError(ErrorCodes.SessionBusy, `session ${id} is in the middle of a turn; wait for it to end, or fork at a finished turn`, { sessionId: id })
    }
    const copy = this.ctx.sessions.fork(source, turn === undefined ? {} : { throughTurn: turn })
    await this.ctx.sessions.close(copy)
    const { agent } = await this.ctx.agents.resume(copy.id)
    // The copy holds the presets logged up to the fork point; the source's current one wins.
    const permission = this.ctx.get('permission')
    if (permission && permission.preset(agent.id) !== permission.preset(id)) permission.setPreset(agent.id, permission.preset(id))
    return { sessionId: agent.id }
  }

  private agentOf(id: string): Agent {
    const agent = this.ctx.agents.get(id)
    if (!agent) throw unknownSession(id, ' (not open here: session/new creates one, session/resume opens a stored one)')
    return agent
  }

  private async prompt(p: Params<'session/prompt'>): Promise<PromptResult> {
    const agent = this.agentOf(p.sessionId)
    const bytes = promptBytes(p.content)
    if (bytes > this.config.maxPromptBytes) {
      throw invalidField('session/prompt', 'content', `the prompt is ${bytes} bytes, more than the limit of ${this.config.maxPromptBytes} (maxPromptBytes)`)
    }
    const text = promptText(p.content)
    if (text !== undefined && text.trim() === '') throw invalidField('session/prompt', 'content', 'the prompt is empty')
    if (this.busy.has(agent.id) || agent.status === 'running') {
      throw new RpcError(ErrorCodes.SessionBusy, `session ${agent.id} is already running a prompt; wait for it or call session/cancel`, { sessionId: agent.id })
    }
    this.busy.add(agent.id)
    try {
      if (text?.trim() === '/compact') return await this.compact(agent)
      const from = agent.session.nextSeq
      agent.followup(userMessage(p.content))
      await agent.whenIdle()
      return turnResult(agent.session.events.filter((e) => e.seq >= from))
    } finally {
      this.busy.delete(agent.id)
    }
  }

  /** `/compact`: the compaction plugin shortens the history; the answer says what happened. */
  private async compact(agent: Agent): Promise<PromptResult> {
    const compaction = this.ctx.get('compaction')
    const failed = (code: string, message: string): PromptResult => ({ stopReason: 'error', text: message, usage: noUsage(), error: { code, message } })
    if (!compaction) return failed('COMPACTION_UNAVAILABLE', '/compact is not available: this profile has no compaction plugin')
    const outcome = await compaction.compact(agent, { reason: 'manual' })
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
