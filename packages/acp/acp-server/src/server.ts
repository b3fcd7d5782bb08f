import path from 'node:path'
// The unstable entry: session/fork and session/set_title are typed there (a superset of the stable API).
import * as acp from '@agentclientprotocol/sdk/unstable'
import type { Agent } from '@dsh/agent'
import {
  type ApprovalPrompt,
  type ApprovalReply,
  ConversationError,
  optionSettings,
  type PromptStop,
  promptOutcome,
  rpcErrorOf,
  SETTINGS_EVENT,
  type SessionOptionId,
  sessionOptions,
} from '@dsh/conversations'
import type { Context } from '@dsh/cordis'
import { NETWORK_EVENT, PRESET_EVENT } from '@dsh/permission'
import type { SessionEvent } from '@dsh/session'
import { rewindSession } from '@dsh/checkpoints'
import { answeredBeforeEnd, parseParams, RpcError, schemas, sessionIdProblem } from '@dsh/sdk-protocol'
import { routeFilesThroughClient } from '@dsh/fs'
import { errorMessage } from '@dsh/tools'
import type { AcpServerConfig } from './config.ts'
import { type McpServerConfig, SessionServers } from '@dsh/mcp'
import { z } from 'zod'
import { mcpConfig, mcpError } from './mcp.ts'
import { promptMessage } from './prompt.ts'
import { ToolViews } from './tool-view.ts'
import { SessionUpdates, usageUpdate } from './updates.ts'

/** The handler of each ACP request dsh answers; a failure goes through `explained`. */
type AcpHandlers = {
  [M in acp.AgentRequestMethod]?: (
    params: acp.AgentRequestParamsByMethod[M],
    signal: AbortSignal,
  ) => Promise<acp.AgentRequestResponsesByMethod[M]>
}
type AnyHandler = (params: unknown, signal: AbortSignal) => Promise<unknown>

/** One session the client drives. */
interface AcpSession {
  agent: Agent
  updates: SessionUpdates
  /** Prompts of this session in flight (a second one is queued by the conversation service, answered when its turn ends). */
  prompts: number
  cancelled: boolean
}

const PERMISSION_OPTIONS: acp.PermissionOption[] = [
  { optionId: 'allow-once', name: 'Allow once', kind: 'allow_once' },
  { optionId: 'allow-session', name: 'Allow for this session', kind: 'allow_always' },
  { optionId: 'reject', name: 'Reject', kind: 'reject_once' },
]

/** ACP's config option category of each session option. */
const CATEGORIES: Record<SessionOptionId, string> = {
  model: 'model',
  reasoning_effort: 'thought_level',
  mode: 'mode',
  network: '_network',
}
/** ACP's stop reason of each way a prompt's turn ends (`promptOutcome`); an `error` that reaches it was a refusal. */
const STOP_REASONS: Record<PromptStop, acp.StopReason> = {
  completed: 'end_turn',
  cancelled: 'cancelled',
  'max-tokens': 'max_tokens',
  error: 'refusal',
}
/** The logged events that change a session's config options. */
const CONFIG_EVENTS = new Set<string>([SETTINGS_EVENT, PRESET_EVENT, NETWORK_EVENT, 'plan/mode'])

/** The method an oversized input line is replaced by (`oversizedLineGuard` of `@dsh/sdk-protocol`); answered with -32600. */
export const OVERSIZED_METHOD = '_dsh/oversized'
/** dsh's extension method: rewind a session (params and result as the SDK's `session/rewind`). */
const REWIND_METHOD = '_dsh/session/rewind'

/**
 * The Agent Client Protocol agent of dsh over one connection: every session
 * it creates or loads is a dsh agent, every session event becomes a
 * `session/update`, tool approvals become `session/request_permission`, the
 * permission presets are the session modes, and when the client offers its
 * file methods the file tools read and write through it.
 */
export class AcpServer {
  private readonly sessions = new Map<string, AcpSession>()
  private readonly links: SessionServers
  private readonly connection: acp.AgentConnection
  private capabilities: acp.ClientCapabilities = {}
  constructor(
    private readonly ctx: Context,
    private readonly config: AcpServerConfig,
    stream: acp.Stream,
    private readonly version: string,
  ) {
    this.links = new SessionServers(ctx)
    const { session } = acp.methods.agent
    const handlers: AcpHandlers = {
      [acp.methods.agent.initialize]: async (params) => this.initialize(params),
      [acp.methods.agent.authenticate]: async () => ({}),
      [session.new]: (params) => this.newSession(params),
      [session.load]: (params) => this.loadSession(params),
      [session.prompt]: (params, signal) => this.prompt(params, signal),
      [session.setMode]: (params) => this.setMode(params),
      [session.setConfigOption]: (params) => this.setConfigOption(params),
      [session.close]: (params) => this.closeSession(params),
      [session.list]: (params) => this.listSessions(params),
      [session.resume]: (params) => this.resumeSession(params),
      [session.fork]: (params) => this.forkSession(params),
      [session.setTitle]: (params) => this.setTitle(params),
      [session.delete]: (params) => this.deleteSession(params),
    }
    const app = acp.agent({ name: 'dsh' })
    for (const [method, handler] of Object.entries(handlers) as Array<[acp.AgentRequestMethod, AnyHandler]>) {
      const answer = ({ params, signal }: acp.AgentRequestContext<unknown>) => explained(() => handler(params, signal))
      app.onRequest(method, answer as acp.AgentRequestHandlersByMethod[typeof method])
    }
    app
      .onNotification(session.cancel, ({ params }) => this.cancel(params.sessionId))
      .onRequest<unknown, RewindResult>(
        REWIND_METHOD,
        (value) => value,
        ({ params }) => explained(() => this.rewind(params)),
      )
      .onRequest<{ bytes?: number; limit?: number }, never>(
        OVERSIZED_METHOD,
        (value) => (value ?? {}) as { bytes?: number; limit?: number },
        ({ params }) => {
          throw acp.RequestError.invalidRequest(
            params,
            `the message is ${params.bytes} bytes, more than the ${params.limit} bytes this server reads in one line (acp-server config maxMessageBytes)`,
          )
        },
      )
    this.connection = app.connect(this.drainedAtEnd(stream))
    this.listen()
  }

  /**
   * The connection closes when its input ends, and answers are not written
   * after that. So the end of input is held back until every request in
   * flight has been answered: running turns are cancelled first, so that a
   * pending prompt answers `cancelled` (bounded by `drainTimeoutMs`).
   */
  private drainedAtEnd(stream: acp.Stream): acp.Stream {
    return answeredBeforeEnd(stream, {
      timeoutMs: this.config.drainTimeoutMs,
      onEnd: () => {
        for (const state of this.sessions.values()) {
          if (state.prompts === 0) continue
          state.cancelled = true
          state.agent.cancel('shutdown')
        }
      },
      onTimeout: (unanswered) =>
        this.ctx.logger.warn(
          'acp: input ended; %d request(s) still unanswered after %d ms',
          unanswered,
          this.config.drainTimeoutMs,
        ),
    })
  }

  /** Resolves when the client has gone (stdin closed) or the connection was closed. */
  get closed(): Promise<void> {
    return this.connection.closed
  }

  close(): void {
    this.connection.close()
  }

  /** Cancels and saves every session of this connection and disconnects their MCP servers. */
  async shutdown(): Promise<void> {
    await Promise.all([...this.sessions.values()].map((state) => this.drop(state)))
  }

  private listen(): void {
    const { ctx } = this
    ctx.on('session/published', (session, event) => {
      const state = this.sessions.get(session.id)
      if (!state || state.agent.session.id !== session.id) return
      this.send(state, state.updates.live(event))
      if (!CONFIG_EVENTS.has(event.type)) return
      const { modes, configOptions } = this.shown(state.agent)
      // Plan mode or the preset changed (by set_mode, set_config_option, or an approved plan): so did the mode.
      if (event.type === 'plan/mode' || event.type === PRESET_EVENT)
        this.send(state, [{ sessionUpdate: 'current_mode_update', currentModeId: modes.currentModeId }])
      this.send(state, [{ sessionUpdate: 'config_option_update', configOptions }])
    })
    ctx.on('agent/delta', (agent, delta) => {
      const state = this.sessions.get(agent.id)
      if (state) this.send(state, state.updates.delta(delta))
    })
    ctx.on('tools/execute', (execution, next) => {
      const state = this.sessions.get(execution.run.sessionId)
      if (state) this.send(state, state.updates.started(execution.call.callId))
      return next()
    })
    ctx.on('session/closed', async (session) => {
      const state = this.sessions.get(session.id)
      if (!state || state.agent.session.id !== session.id) return
      this.sessions.delete(session.id)
      await this.links.detach(session.id)
    })
    ctx.conversations.broker.setApprover(ctx, (prompt, signal) => this.approve(prompt, signal))
    routeFilesThroughClient(ctx, {
      canRead: (id) => id !== undefined && this.sessions.has(id) && this.capabilities.fs?.readTextFile === true,
      canWrite: (id) => id !== undefined && this.sessions.has(id) && this.capabilities.fs?.writeTextFile === true,
      read: async (sessionId, file) =>
        (await this.connection.client.request(acp.methods.client.fs.readTextFile, { sessionId, path: file })).content,
      write: async (sessionId, file, content) => {
        await this.connection.client.request(acp.methods.client.fs.writeTextFile, { sessionId, path: file, content })
      },
    })
  }

  private send(state: AcpSession, updates: acp.SessionUpdate[]): void {
    for (const update of updates) {
      this.connection.client
        .notify(acp.methods.client.session.update, { sessionId: state.agent.id, update })
        .catch((error: unknown) => {
          this.ctx.logger.debug('acp: a session/update was not delivered: %s', errorMessage(error))
        })
    }
  }

  /** `available_commands_update`, sent once the session's id has reached the client. */
  private announceCommands(state: AcpSession): void {
    const availableCommands = this.ctx.conversations.commands({ sessionId: state.agent.id }).map((command) => ({
      name: command.name,
      description: command.description,
      ...(command.argumentHint ? { input: { hint: command.argumentHint } } : {}),
    }))
    if (availableCommands.length)
      setImmediate(() => this.send(state, [{ sessionUpdate: 'available_commands_update', availableCommands }]))
  }

  private initialize(params: acp.InitializeRequest): acp.InitializeResponse {
    this.capabilities = params.clientCapabilities ?? {}
    return {
      // Version 1 is the only one; a client asking for another gets 1 and decides whether to go on.
      protocolVersion: acp.PROTOCOL_VERSION,
      agentInfo: { name: 'dsh', title: 'dsh', version: this.version },
      agentCapabilities: {
        loadSession: true,
        promptCapabilities: { image: this.ctx.conversations.takesImages(), audio: false, embeddedContext: true },
        mcpCapabilities: { http: this.ctx.get('mcp') !== undefined, sse: false },
        sessionCapabilities: { close: {}, list: {}, resume: {}, fork: {}, title: {}, delete: {} },
      },
      authMethods: [],
    }
  }

  /**
   * The session's settings as ACP shows them (`sessionOptions` of the
   * conversation service): each a select config option, and the `mode` one
   * also as the session modes.
   */
  private shown(agent: Agent): { modes: acp.SessionModeState; configOptions: acp.SessionConfigOption[] } {
    const options = sessionOptions(this.ctx, agent)
    const mode = options.find((o) => o.id === 'mode')
    return {
      modes: {
        currentModeId: mode?.current ?? '',
        availableModes: (mode?.choices ?? []).map(({ value, ...rest }) => ({ id: value, ...rest })),
      },
      configOptions: options.map((o) => ({
        type: 'select',
        id: o.id,
        name: o.name,
        category: CATEGORIES[o.id],
        currentValue: o.current,
        options: o.choices,
      })),
    }
  }

  private require(sessionId: string): AcpSession {
    checkSessionId(sessionId)
    const state = this.sessions.get(sessionId)
    if (!state)
      throw new acp.RequestError(
        -32002,
        `unknown session: ${sessionId} (create it with session/new or open it with session/load)`,
        { sessionId },
      )
    return state
  }

  private adopt(
    agent: Agent,
    updates = new SessionUpdates(new ToolViews(agent.session.meta.cwd, this.ctx.tools, this.config.toolKinds)),
  ): AcpSession {
    const state: AcpSession = { agent, updates, prompts: 0, cancelled: false }
    this.sessions.set(agent.id, state)
    return state
  }

  /** Closes a session: cancels its turn (a prompt in flight answers `cancelled`), saves it, and lets go of its MCP servers. */
  private async drop(state: AcpSession): Promise<void> {
    state.cancelled = true
    this.sessions.delete(state.agent.id)
    await this.ctx.conversations.close(state.agent.id)
    await this.links.detach(state.agent.id)
  }

  private mcpServers(servers: readonly acp.McpServer[], cwd: string): Array<[string, McpServerConfig]> {
    return servers.map((server) => [server.name, mcpConfig(server, cwd)])
  }

  /** Connects the session's MCP servers; tools of servers a client supplied are for the sessions that supplied them. */
  private async connectMcp(state: AcpSession, servers: Array<[string, McpServerConfig]>): Promise<void> {
    try {
      await this.links.attach(state.agent.id, servers)
    } catch (error) {
      await this.drop(state)
      throw mcpError(error)
    }
  }

  private async newSession(params: acp.NewSessionRequest): Promise<acp.NewSessionResponse> {
    const cwd = folderOf(params)
    const servers = this.mcpServers(params.mcpServers, cwd)
    const agent = await this.ctx.conversations.create({
      cwd,
      network: parseParams('session/new', NewSessionMeta, params)._meta?.network,
    })
    const state = this.adopt(agent)
    await this.connectMcp(state, servers)
    this.announceCommands(state)
    return { sessionId: agent.id, ...this.shown(agent) }
  }

  private async loadSession(params: acp.LoadSessionRequest): Promise<acp.LoadSessionResponse> {
    const { id, open, agent } = await this.reopen(params, 'load')
    const cwd = agent.session.meta.cwd
    if (path.resolve(params.cwd) !== cwd)
      this.ctx.logger.info('acp: session %s keeps its own folder %s (the client asked for %s)', id, cwd, params.cwd)
    const servers = this.mcpServers(params.mcpServers, cwd)
    const updates = new SessionUpdates(new ToolViews(cwd, this.ctx.tools, this.config.toolKinds))
    const state = open ?? this.adopt(agent, updates)
    state.updates = updates
    const events = await this.ctx.conversations.events(id)
    for (const event of events) this.send(state, updates.replay(event))
    this.send(state, usageUpdate(this.ctx.conversations.meter(events)))
    await this.connectMcp(state, servers)
    this.announceCommands(state)
    return this.shown(state.agent)
  }

  private async prompt(params: acp.PromptRequest, signal: AbortSignal): Promise<acp.PromptResponse> {
    const state = this.require(params.sessionId)
    const { agent } = state
    const prompt = promptMessage(params.prompt, {
      images: this.ctx.conversations.takesImages(agent.id),
      model: agent.options.model,
      maxBytes: this.config.maxPromptBytes,
    })
    if (state.prompts++ === 0) state.cancelled = false
    const abort = () => this.cancel(agent.id)
    signal.addEventListener('abort', abort, { once: true })
    let events: SessionEvent[]
    try {
      events = await this.ctx.conversations.prompt(agent.id, prompt)
    } finally {
      signal.removeEventListener('abort', abort)
      state.prompts--
    }
    this.send(state, usageUpdate(this.ctx.conversations.meter(agent.session.events)))
    if (state.cancelled) return { stopReason: 'cancelled' }
    // A failed turn rejects the prompt with the failure; a refused one (the content filter) is ACP's `refusal`.
    const { stopReason, error } = promptOutcome(events, this.ctx.conversations.meter(events))
    if (stopReason === 'error' && error?.code !== 'CONTENT_FILTER')
      throw new acp.RequestError(
        -32603,
        `the turn failed: ${error?.code ?? 'UNKNOWN'}: ${error?.message ?? 'no details'}`,
        error,
      )
    return { stopReason: STOP_REASONS[stopReason] }
  }

  private cancel(sessionId: string): void {
    const state = this.sessions.get(sessionId)
    if (!state) {
      this.ctx.logger.debug('acp: session/cancel for unknown session %s', sessionId)
      return
    }
    if (state.prompts > 0) state.cancelled = true
    this.ctx.conversations.cancel(sessionId).catch((error: unknown) => {
      this.ctx.logger.debug('acp: session/cancel of %s failed: %s', sessionId, errorMessage(error))
    })
  }

  /** A preset mode leaves plan mode; the plan mode keeps the preset for after the plan. */
  private async setMode(params: acp.SetSessionModeRequest): Promise<acp.SetSessionModeResponse> {
    const options = sessionOptions(this.ctx, this.require(params.sessionId).agent)
    const modes = options.find((o) => o.id === 'mode')?.choices.map((c) => c.value) ?? []
    if (!modes.includes(params.modeId))
      throw invalid(`unknown mode "${params.modeId}"; the modes are ${modes.join(', ')}`, { modeId: params.modeId })
    await this.ctx.conversations.configure(params.sessionId, optionSettings(options, 'mode', params.modeId))
    return {}
  }

  /**
   * Sets one config option (model, reasoning effort, mode or network) through
   * `ctx.conversations.configure`, logged so that it holds after
   * `session/load`; answers the whole set. A value or option the session does
   * not show is -32602 naming `configId` or `value` (the service's refusal, through `explained`).
   */
  private async setConfigOption(
    params: acp.SetSessionConfigOptionRequest,
  ): Promise<acp.SetSessionConfigOptionResponse> {
    const { agent } = this.require(params.sessionId)
    const settings = optionSettings(sessionOptions(this.ctx, agent), params.configId, params.value)
    if (Object.keys(settings).length) await this.ctx.conversations.configure(params.sessionId, settings)
    return { configOptions: this.shown(agent).configOptions }
  }

  /** Stored sessions, newest first, a page at a time; subagent sessions are left out. */
  private async listSessions(params: acp.ListSessionsRequest): Promise<acp.ListSessionsResponse> {
    const cwd = params.cwd === undefined || params.cwd === null ? undefined : absolute(params.cwd)
    const page = await this.ctx.conversations.list({
      limit: this.config.listLimit,
      ...(cwd ? { cwd } : {}),
      ...(params.cursor ? { cursor: params.cursor } : {}),
    })
    return {
      sessions: page.sessions.map((s) => ({
        sessionId: s.sessionId,
        cwd: s.cwd,
        ...(s.title ? { title: s.title } : {}),
        updatedAt: new Date(s.updatedAt).toISOString(),
      })),
      ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}),
    }
  }

  /**
   * What `session/load` and `session/resume` share: the request checked, and
   * the stored session resumed (taking its lease) unless this connection has
   * it open between prompts.
   */
  private async reopen(
    params: { sessionId: string; cwd: string; additionalDirectories?: string[] | null },
    verb: 'load' | 'resume',
  ): Promise<{ id: string; open: AcpSession | undefined; agent: Agent }> {
    const id = checkSessionId(params.sessionId)
    folderOf(params)
    const open = this.sessions.get(id)
    if (open && open.prompts > 0)
      throw invalid(`session ${id} is running a prompt; ${verb} it again once the prompt has ended`, { sessionId: id })
    const { agent, problems } = await this.ctx.conversations.resume(id)
    for (const problem of problems) this.ctx.logger.warn('acp: %s', problem)
    return { id, open, agent }
  }

  /** Like `session/load` without the replay: the client already shows the history. */
  private async resumeSession(params: acp.ResumeSessionRequest): Promise<acp.ResumeSessionResponse> {
    const { open, agent } = await this.reopen(params, 'resume')
    const state = open ?? this.adopt(agent)
    await this.connectMcp(state, this.mcpServers(params.mcpServers ?? [], agent.session.meta.cwd))
    this.send(state, usageUpdate(this.ctx.conversations.meter(agent.session.events)))
    return this.shown(state.agent)
  }

  /** A copy of the whole session (open or stored, between turns) as a new session of this connection. */
  private async forkSession(params: acp.ForkSessionRequest): Promise<acp.ForkSessionResponse> {
    const id = checkSessionId(params.sessionId)
    folderOf(params)
    const agent = await this.ctx.conversations.fork(id)
    const state = this.adopt(agent)
    await this.connectMcp(state, this.mcpServers(params.mcpServers ?? [], agent.session.meta.cwd))
    return { sessionId: agent.id, ...this.shown(agent) }
  }

  /**
   * dsh's extension: fork a session before one of its user messages and, if
   * asked, restore the workspace's files (`ctx.checkpoints`). The fork is
   * stored closed; `session/resume` or `session/load` opens it.
   */
  private rewind(params: unknown): Promise<RewindResult> {
    // The SDK's `session/rewind` params; -32602 naming the field otherwise.
    const { sessionId, ...options } = parseParams(REWIND_METHOD, schemas.SessionRewindParams, params)
    return rewindSession(this.ctx, sessionId, options)
  }

  /** Renames an open or stored session (a stored one stays closed; a blank title is the service's -32602). */
  private async setTitle(params: acp.SetSessionTitleRequest): Promise<acp.SetSessionTitleResponse> {
    return { title: await this.ctx.conversations.rename(checkSessionId(params.sessionId), params.title) }
  }

  /** Deletes the session's log (and its subagents'); one this connection has open is closed first. */
  private async deleteSession(params: acp.DeleteSessionRequest): Promise<acp.DeleteSessionResponse> {
    const id = checkSessionId(params.sessionId)
    const state = this.sessions.get(id)
    if (state) await this.drop(state)
    await this.ctx.conversations.delete(id)
    return {}
  }

  private async closeSession(params: acp.CloseSessionRequest): Promise<acp.CloseSessionResponse> {
    await this.drop(this.require(params.sessionId))
    return {}
  }

  private async approve({ sessionId, call, reason }: ApprovalPrompt, signal: AbortSignal): Promise<ApprovalReply> {
    const state = this.sessions.get(sessionId)
    if (!state) throw new Error(`session ${sessionId} is not driven by the ACP client, so no one can approve its calls`)
    const toolCall = state.updates.views.toolCall(call.callId, call.name, call.arguments)
    // The reason goes under what the call shows (a diff, say).
    toolCall.content = [...(toolCall.content ?? []), { type: 'content', content: { type: 'text', text: reason } }]
    const response = await this.connection.client.request(
      acp.methods.client.session.requestPermission,
      { sessionId, toolCall, options: PERMISSION_OPTIONS },
      { cancellationSignal: signal, stopWaitingOnCancel: true },
    )
    const outcome = response.outcome
    if (outcome.outcome === 'cancelled') return { decision: 'reject', message: 'the permission request was cancelled' }
    if (outcome.optionId === 'allow-once' || outcome.optionId === 'allow-session') return { decision: outcome.optionId }
    return { decision: 'reject' }
  }
}

/**
 * Runs a handler. A conversation service error becomes its ACP error (an
 * unknown session -32002, a busy one or a bad argument -32602), a failed
 * `parseParams` keeps its -32602; any other failure reaches the client as
 * -32603 with its message, not a bare "Internal error".
 */
async function explained<T>(handler: () => Promise<T>): Promise<T> {
  try {
    return await handler()
  } catch (error) {
    if (error instanceof acp.RequestError) throw error
    if (error instanceof RpcError) throw new acp.RequestError(error.code, error.message, error.data)
    if (!(error instanceof ConversationError)) throw acp.RequestError.internalError(undefined, errorMessage(error))
    const { code, message, data } = rpcErrorOf(error, { notFound: -32002, busy: -32602 })
    throw new acp.RequestError(code, message, data)
  }
}

function invalid(text: string, data?: unknown): acp.RequestError {
  return acp.RequestError.invalidParams(data, text)
}

type RewindResult = ReturnType<typeof schemas.SessionRewindResult.parse>

/** The id, or -32602 saying why it cannot name a session (a path, a wrong shape). */
function checkSessionId(id: string): string {
  const problem = sessionIdProblem(id)
  if (problem) throw invalid(`sessionId ${JSON.stringify(id)} ${problem}`, { sessionId: id })
  return id
}

/** ACP's `cwd` resolved, or -32602 when it is not an absolute path (whether it is a folder is the service's to say). */
function absolute(cwd: string): string {
  if (!path.isAbsolute(cwd)) throw invalid(`cwd must be an absolute path, got ${JSON.stringify(cwd)}`, { cwd })
  return path.resolve(cwd)
}

/** The folder of a request that opens a session, checked; `additionalDirectories` are refused. */
function folderOf(params: { cwd: string; additionalDirectories?: string[] | null }): string {
  const cwd = absolute(params.cwd)
  if (params.additionalDirectories?.length)
    throw invalid('additionalDirectories is not supported: dsh works in one folder (cwd) per session')
  return cwd
}

/**
 * dsh's own `session/new` option, in `_meta`: `{ network: 'off' | 'proxy' | 'on' }` for the session's
 * sandboxed commands, checked as the SDK's `session/new` checks its `network` (-32602 naming `_meta.network`).
 */
const NewSessionMeta = z.object({
  _meta: z.object({ network: schemas.SessionNewParams.shape.network }).nullish(),
})
