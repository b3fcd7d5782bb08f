import type {} from '@dsh/cmdline'
import { rewindSession } from '@dsh/checkpoints'
import {
  ConversationError,
  type ConversationSummary,
  checkedPrompt,
  type PromptInput,
  promptOutcome,
  promptText,
  rpcErrorOf,
  runCommand,
} from '@dsh/conversations'
import type { Context } from '@dsh/cordis'
import { noUsage } from '@dsh/llm'
import {
  ErrorCodes,
  invalidField,
  JsonRpcPeer,
  MethodDispatcher,
  type ParsedParams as Params,
  PROTOCOL_VERSION,
  type ProtocolStdio,
  type PromptResult,
  type RequestContext,
  type ResultOf,
  RpcError,
  type SessionSummary,
  schemas,
} from '@dsh/sdk-protocol'
import { errorMessage } from '@dsh/tools'
import manifest from '../package.json' with { type: 'json' }
import type { SdkServerConfig } from './config.ts'

/** Where requests arrive (stdin) and where answers and notifications go (stdout). */
export type SdkStreams = Pick<ProtocolStdio, 'input' | 'output'>

interface LoaderLike {
  settle(timeoutMs: number): Promise<unknown>
}

const NOT_OPEN = ' (not open here: session/new creates one, session/resume opens a stored one)'

/** A listed session as the SDK shows it; fields left undefined are not sent (JSON has no undefined). */
const summary = ({ sessionId, title, cwd, createdAt, updatedAt, parentSession, forkedFrom }: ConversationSummary) =>
  ({ sessionId, title: title ?? null, cwd, createdAt, updatedAt, parentSession, forkedFrom }) satisfies SessionSummary

/** The SDK's name of a service argument, where a method names it otherwise. */
const FIELDS: Record<string, Record<string, string>> = {
  'session/new': { preset: 'permissionPreset' },
  'session/configure': { plan: 'planMode' },
}

const CODES = { notFound: ErrorCodes.UnknownSession, busy: ErrorCodes.SessionBusy }

/** A conversation service error as the JSON-RPC error of `method`. */
function rpcError(method: string, error: unknown): unknown {
  if (!(error instanceof ConversationError)) return error
  const { code, message, data } = rpcErrorOf(error, CODES, { prefix: `${method}: `, rename: FIELDS[method] ?? {} })
  return new RpcError(code, message, data)
}

/**
 * The SDK protocol on one pair of streams: JSON-RPC requests in, answers and
 * notifications out. Sessions are the agents of `ctx.agents`; approvals and
 * questions go to the client when it declared it can answer them.
 */
export class SdkServer {
  private readonly peer: JsonRpcPeer
  private readonly logger: ReturnType<Context['logger']>
  private closing: Promise<void> | undefined
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
      onRequest: (method, params, request) => this.methods.dispatch(method, params, request),
      onNotification: (method, params) => {
        this.methods
          .dispatch(method, params)
          .catch((error) => this.logger.warn('notification %s failed: %s', method, errorMessage(error)))
      },
      onInputEnd: () => {
        this.peer.close()
        void this.stop().then(this.onStopped)
      },
      log: (message) => this.logger.warn(message),
    })
    const notify = (method: string, params: object) => {
      if (this.methods.initialized) this.peer.notify(method, params)
    }
    ctx.on('session/published', (session, event) => notify('session/event', { sessionId: session.id, event }))
    ctx.on('agent/delta', (agent, { turn, step, index, kind, delta }) =>
      notify('session/delta', { sessionId: agent.id, turn, step, index, kind, delta }),
    )
    ctx.on('agent/status', (agent, status) => notify('session/status', { sessionId: agent.id, status }))
    ctx.effect(() => () => this.peer.close(), 'sdk connection')
  }

  private readonly methods = new MethodDispatcher(
    {
      initialize: (p) => this.initialize(p),
      'session/new': async ({ cwd, model, permissionPreset: preset, network }) => ({
        sessionId: (await this.conversations.create({ cwd, model, preset, network })).id,
      }),
      'session/resume': async ({ sessionId }) => {
        const { problems } = await this.conversations.resume(sessionId)
        return { sessionId, problems: problems.length ? problems : undefined }
      },
      'session/fork': async ({ sessionId, turn }) => ({
        sessionId: (await this.conversations.fork(sessionId, { turn })).id,
      }),
      'session/list': async (p) => {
        if (p.limit !== undefined && p.limit > this.config.maxListLimit)
          throw invalidField('session/list', 'limit', `must be at most ${this.config.maxListLimit}`)
        const page = await this.conversations.list({ ...p, limit: p.limit ?? this.config.listLimit })
        return { sessions: page.sessions.map(summary), nextCursor: page.nextCursor }
      },
      'session/prompt': (p, request) => this.prompt(p, request),
      'session/steer': async (p) => {
        this.conversations.steer(p.sessionId, this.message(p.content))
        return {}
      },
      'session/configure': async ({ sessionId, planMode: plan, ...settings }) => {
        await this.conversations.configure(sessionId, { ...settings, plan })
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
      'session/rewind': ({ sessionId, ...options }) => rewindSession(this.ctx, sessionId, options, { keepOpen: true }),
      shutdown: async () => {
        await this.stop()
        setImmediate(this.onStopped)
        return {}
      },
    },
    rpcError,
  )

  /** What `session/configure` answers: the settings the session's next request uses. */
  private async settings(id: string): Promise<ResultOf<'session/configure'>> {
    // Fields left undefined are not sent (JSON has no undefined).
    const { model, reasoningEffort, preset, network, plan } = await this.conversations.show(id)
    return { model: model ?? this.ctx.agents.defaults().model, reasoningEffort, preset, network, planMode: plan }
  }

  private get conversations() {
    return this.ctx.conversations
  }

  private async initialize(p: Params<'initialize'>): Promise<ResultOf<'initialize'>> {
    await (this.ctx.get('loader') as LoaderLike | undefined)?.settle(this.config.settleTimeoutMs)
    const { broker } = this.conversations
    if (p.capabilities?.approvals)
      this.granted.approvals = this.offer('approvals', () =>
        broker.setApprover(this.ctx, ({ sessionId, call, reason, preset }, signal) => {
          const toolCall = { callId: call.callId, name: call.name, arguments: call.arguments }
          const params = { sessionId, toolCall, preset: preset ?? null, reason }
          return this.peer.requestChecked('approval/request', params, schemas.ApprovalResult, '{decision, message?}', {
            signal,
          })
        }),
      )
    if (p.capabilities?.questions && this.ctx.get('questions'))
      this.granted.questions = this.offer('questions', () =>
        broker.setAsker(this.ctx, async ({ sessionId, callId, questions }, signal) => {
          const expected = '{answers: [{question, selected, text?}]}'
          const params = { sessionId, callId, questions }
          return (
            await this.peer.requestChecked('question/ask', params, schemas.QuestionAskResult, expected, { signal })
          ).answers
        }),
      )
    this.methods.initialized = true
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
  private offer(what: string, take: () => unknown): boolean {
    try {
      take()
      return true
    } catch (error) {
      this.logger.warn('the client offered %s, but they cannot be routed to it: %s', what, errorMessage(error))
      return false
    }
  }

  /** The user message of a prompt or a steer; too big or empty is -32602 naming `content`. */
  private message(content: PromptInput) {
    return checkedPrompt(content, this.config.maxPromptBytes, 'maxPromptBytes')
  }

  /**
   * Runs a prompt's turn and answers when it ends. On a busy session it is
   * queued: `session/queued` says so at once, and the answer comes when its
   * own turn ends. `/compact` and `/plan` are the service's commands, not turns.
   */
  private async prompt(p: Params<'session/prompt'>, request?: RequestContext): Promise<PromptResult> {
    const agent = this.conversations.agent(p.sessionId, NOT_OPEN)
    const message = this.message(p.content)
    const text = promptText(p.content)?.trim()
    // Not awaited for other text: it reaches conversations.prompt in the tick it arrived (an await here broke
    // the cancel of a queued prompt, see the sdk-client tests).
    const command = text === undefined ? undefined : runCommand(this.conversations, agent.id, text)
    if (command) {
      const { text: answer, error } = await command
      return { stopReason: error ? 'error' : 'completed', text: answer, usage: noUsage(), ...(error ? { error } : {}) }
    }
    const onQueued = (position: number) => {
      if (request) this.peer.notify('session/queued', { sessionId: agent.id, id: request.id, position })
    }
    const events = await this.conversations.prompt(agent.id, message, { onQueued })
    return promptOutcome(events, this.conversations.meter(events))
  }

  /**
   * Stops taking work, cancels running turns, waits (bounded) for the
   * requests being handled to answer, then closes every session, which saves it.
   */
  private stop(): Promise<void> {
    this.methods.stopping = true
    this.closing ??= (async () => {
      for (const agent of this.ctx.agents.list()) agent.cancel('shutdown')
      await this.methods.settled(this.config.drainTimeoutMs)
      await this.ctx.agents.disposeAll()
    })()
    return this.closing
  }
}
