import { stat } from 'node:fs/promises'
import type { Agent, AgentOptions } from '@dsh/agent'
import type { CommandInfo } from '@dsh/commands'
import type {} from '@dsh/compaction'
import { type Context, Service } from '@dsh/cordis'
import type { Message, ModelPrice, ReasoningEffort } from '@dsh/llm'
import { NETWORK_EVENT, type NetworkMode, PRESET_EVENT, type PermissionPreset } from '@dsh/permission'
import type {} from '@dsh/plan-mode'
import { Session, type SessionEvent, type SessionId } from '@dsh/session'
import type {} from '@dsh/session-catalog'
import type { OpenedLog, SessionPersistence } from '@dsh/session-persistence'
import type {} from '@dsh/session-titles'
import { meterUsage } from '@dsh/token-meter'
import type { UsageReport } from '@dsh/wire-types'
import { InteractionBroker } from './broker.ts'
import { busy, invalid, notFound, unavailable } from './errors.ts'
import { listConversations, type ListQuery, type ListPage } from './listing.ts'

declare module '@dsh/cordis' {
  interface Context {
    conversations: Conversations
  }
}

/** The event that records a per-session model choice (`configure`), read back on resume. */
export const SETTINGS_EVENT = 'conversation/settings'
const PLAN_EVENT = 'plan/mode'

/** A session's new settings; a field left out (or undefined, as a request's optional field) keeps the default. */
export interface CreateOptions {
  cwd: string
  model?: string | undefined
  reasoningEffort?: ReasoningEffort | undefined
  preset?: PermissionPreset | undefined
  network?: NetworkMode | undefined
}

/** What `configure` changes; each field is optional (undefined changes nothing) and logged so that it holds after resume. */
export interface SessionSettings {
  model?: string | undefined
  reasoningEffort?: ReasoningEffort | undefined
  preset?: PermissionPreset | undefined
  network?: NetworkMode | undefined
  /** Plan mode on or off (needs the plan-mode plugin). */
  plan?: boolean | undefined
}

export interface ModelSummary {
  provider: string
  id: string
  contextWindow: number
  maxOutputTokens?: number
  images?: boolean
  price?: ModelPrice
}

/** A session as a surface shows it: live, or read from its stored log without resuming it. */
export interface SessionView {
  sessionId: string
  title?: string
  cwd: string
  createdAt: number
  updatedAt: number
  running: boolean
  model?: string
  reasoningEffort?: ReasoningEffort
  preset?: PermissionPreset
  network?: NetworkMode
  plan: boolean
  parentSession?: string
  forkedFrom?: string
}

/** What `compact` did: how many messages a summary replaced, or why it failed. */
export interface CompactOutcome {
  compacted: boolean
  replaced: number
  error?: string
}

/** What `prompt` may be told. */
export interface PromptOptions {
  /** Called at once when the prompt has to wait for the session's running work, with its place in the queue (1 first). */
  onQueued?: (position: number) => void
}

const NOT_OPEN = ' (not open here: create one, or resume a stored one)'

/** Reads a session's stored log (a surface's cache of recent reads, say). */
export type LogReader = () => Promise<OpenedLog>

/** A stored log read as it is, or a live session. */
type Readable = Pick<Session, 'meta' | 'events' | 'last'>

/**
 * `ctx.conversations`: what every surface (SDK, web, ACP) does with a
 * session, once. A thin layer over `ctx.agents`, `ctx.sessions`, the storage
 * and catalog, `ctx.permission`, `ctx.planMode`, `ctx.compaction` and
 * `ctx.sessionTitles`; the optional ones are asked for when a request needs them.
 */
export class Conversations extends Service {
  static inject = ['agents', 'sessions']
  private readonly home: Context
  /** Per session: the end of the last prompt or compaction started here (later prompts wait for it). */
  private readonly tails = new Map<string, Promise<void>>()
  /** Per session: the queued prompts (`dropped` by `cancel`). */
  private readonly waiting = new Map<string, Set<{ dropped: boolean }>>()
  /** Resumes under way, so that two requests for one stored session resume it once. */
  private readonly resuming = new Map<string, Promise<{ agent: Agent; problems: string[] }>>()
  /** Where approvals and questions go; surfaces register how they ask their user here. */
  readonly broker: InteractionBroker

  constructor(ctx: Context) {
    super(ctx, 'conversations')
    this.home = ctx
    this.broker = new InteractionBroker(ctx)
    ctx.sessions.registerEventType(ctx, SETTINGS_EVENT)
  }

  /** The models every route of `ctx.llm` offers (none without it). */
  models(): ModelSummary[] {
    const llm = this.home.get('llm')
    if (!llm) return []
    return llm.listRoutes().flatMap((provider) =>
      llm.models(provider).map((m) => ({
        provider,
        id: m.id,
        contextWindow: m.contextWindow,
        ...(m.maxOutputTokens !== undefined ? { maxOutputTokens: m.maxOutputTokens } : {}),
        ...(m.images !== undefined ? { images: m.images } : {}),
        ...(m.price ? { price: { ...m.price } } : {}),
      })),
    )
  }

  /** Whether the model of session `id` (without one: the default model) takes images; false when that is not known. */
  takesImages(id?: string): boolean {
    try {
      const { provider, model } = id === undefined ? this.home.agents.defaults() : this.agent(id).options
      return this.home.get('llm')?.takesImages(provider, model) === true
    } catch {
      return false
    }
  }

  /** The route serving `model`: the default route when it lists the model, else the first that does. */
  private route(model: string): Partial<AgentOptions> {
    const models = this.models()
    if (models.length === 0) return { model }
    const provider = this.home.agents.defaults().provider
    const match = models.find((m) => m.id === model && m.provider === provider) ?? models.find((m) => m.id === model)
    if (!match)
      throw invalid(
        'model',
        `unknown model "${model}"; this server offers ${[...new Set(models.map((m) => m.id))].join(', ')}`,
      )
    return { provider: match.provider, model: match.id }
  }

  private permission(field: string) {
    const permission = this.home.get('permission')
    if (!permission) throw unavailable(field, 'permission', field)
    return permission
  }

  /** A new session in `cwd` (a folder), its log stored before this resolves. */
  async create(options: CreateOptions): Promise<Agent> {
    const folder = await stat(options.cwd).catch(() => undefined)
    if (!folder?.isDirectory()) throw invalid('cwd', `${options.cwd} is not a folder`)
    const permission =
      options.preset || options.network ? this.permission(options.preset ? 'preset' : 'network') : undefined
    const agentOptions = {
      ...(options.model ? this.route(options.model) : {}),
      ...(options.reasoningEffort ? { reasoningEffort: options.reasoningEffort } : {}),
    }
    const agent = await this.home.agents.create({ cwd: options.cwd, options: agentOptions })
    if (options.preset) permission?.setPreset(agent.id, options.preset)
    if (options.network) permission?.setNetwork(agent.id, options.network)
    return agent
  }

  /**
   * The live agent of `id`, reopening the stored session (taking its lease)
   * when it is not open. The model settings last logged (`configure`, or the
   * last request) are restored.
   */
  async resume(id: string): Promise<{ agent: Agent; problems: string[] }> {
    const live = this.home.agents.get(id)
    if (live) return { agent: live, problems: [] }
    if (this.home.sessions.get(id))
      throw busy(
        id,
        `session ${id} is open in this process without an agent (another surface holds it); try again later`,
      )
    let pending = this.resuming.get(id)
    if (!pending) {
      pending = this.reopen(id).finally(() => this.resuming.delete(id))
      this.resuming.set(id, pending)
    }
    return pending
  }

  private async reopen(id: string): Promise<{ agent: Agent; problems: string[] }> {
    if (!this.home.get('sessionPersistence')) throw notFound(id)
    let resumed: { agent: Agent; problems: string[] }
    try {
      resumed = await this.home.agents.resume(id as SessionId)
    } catch (error) {
      if (error instanceof Error && error.name === 'SessionNotFoundError') throw notFound(id)
      if (error instanceof Error && error.name === 'SessionBusyError') throw busy(id, error.message)
      throw error
    }
    const { agent } = resumed
    agent.options = { ...agent.options, ...loggedSettings(agent.session.events) }
    return resumed
  }

  /** The live agent of `id`; a session that is not open here is refused (`hint` says how to open it). */
  agent(id: string, hint = ''): Agent {
    const agent = this.home.agents.get(id)
    if (!agent) throw notFound(id, hint)
    return agent
  }

  /** The stored log of `id` (read by `read` when given), or undefined when there is no storage or no such log. */
  private async stored(id: string, read?: LogReader): Promise<OpenedLog | undefined> {
    const persistence = this.home.get('sessionPersistence')
    if (!persistence) return undefined
    try {
      return await (read ? read() : persistence.open(id as SessionId))
    } catch (error) {
      if (error instanceof Error && error.name === 'SessionNotFoundError') return undefined
      throw error
    }
  }

  /** The open session of `id`, else its stored log as a session nothing is published or stored from. */
  private async readable(id: string, read?: LogReader): Promise<Session> {
    const open = this.home.sessions.get(id)
    if (open) return open
    const stored = await this.stored(id, read)
    if (!stored) throw notFound(id)
    return new Session(stored.meta, this.home.sessions.checkLoadable(stored.events, stored.file), () => {})
  }

  /**
   * A new session starting with the source's events up to the end of `turn`
   * (default: all of them; the source must then be between turns). The copy
   * is stored and resumed, so its agent starts from what is on disk. It runs
   * under the source's current model, effort, preset, network and plan mode,
   * even when they changed after the fork point.
   */
  async fork(id: string, options: { turn?: number | undefined } = {}): Promise<Agent> {
    const source = await this.readable(id)
    const { turn } = options
    if (
      turn !== undefined &&
      !source.events.some((e) => e.type === 'turn/end' && (e as SessionEvent<'turn/end'>).data.turn === turn)
    ) {
      throw invalid('turn', `session ${id} has no finished turn ${turn}`)
    }
    if (turn === undefined && source.turnState().open) {
      throw busy(id, `session ${id} is in the middle of a turn; wait for it to end, or fork at a finished turn`)
    }
    const copy = this.home.sessions.fork(source, turn === undefined ? {} : { throughTurn: turn })
    await this.home.sessions.close(copy)
    const { agent } = await this.resume(copy.id)
    this.carryState(source, agent.session)
    const live = this.home.agents.get(id)
    const { provider, model, reasoningEffort } = live ? live.options : loggedSettings(source.events)
    if (model && (model !== agent.options.model || reasoningEffort !== agent.options.reasoningEffort))
      this.setModel(agent, {
        ...(provider ? { provider } : {}),
        model,
        ...(reasoningEffort ? { reasoningEffort } : {}),
      })
    return agent
  }

  /** Gives `copy` the preset, network and plan mode `source` has now. */
  private carryState(source: Readable, copy: Session): void {
    const permission = this.home.get('permission')
    const preset = source.last(PRESET_EVENT)?.data.preset ?? null
    if (permission && preset !== (copy.last(PRESET_EVENT)?.data.preset ?? null)) {
      if (preset) permission.setPreset(copy.id, preset)
      else permission.resetPreset(copy.id)
    }
    const network = source.last(NETWORK_EVENT)?.data.network ?? null
    if (permission && network !== (copy.last(NETWORK_EVENT)?.data.network ?? null))
      permission.setNetwork(copy.id, network)
    const plan = source.last(PLAN_EVENT)?.data.active === true
    const planMode = this.home.get('planMode')
    if (planMode && plan !== (copy.last(PLAN_EVENT)?.data.active === true)) planMode.set(copy, plan)
  }

  /** One page of stored sessions, newest first (see `listConversations` for what `query` matches). */
  list(query: ListQuery): Promise<ListPage> {
    return listConversations(this.home, query)
  }

  /**
   * The session as a surface shows it. A surface that reads the stored log
   * itself (a cache) passes `read`, so that the log is read once.
   */
  async show(id: string, options: { read?: LogReader } = {}): Promise<SessionView> {
    const agent = this.home.agents.get(id)
    const session = agent?.session ?? (await this.readable(id, options.read))
    const { meta, events } = session
    const header = session.last('request/header')?.data
    const title = session.last('session/title')?.data.title ?? meta.title
    const model = agent?.options.model ?? header?.model
    const reasoningEffort = agent ? agent.options.reasoningEffort : header?.reasoningEffort
    const permission = this.home.get('permission')
    const preset =
      permission && (agent ? permission.preset(id) : (session.last(PRESET_EVENT)?.data.preset ?? permission.preset('')))
    return {
      sessionId: meta.id,
      ...(title ? { title } : {}),
      cwd: meta.cwd,
      createdAt: meta.createdAt,
      updatedAt: events.at(-1)?.time ?? meta.createdAt,
      running: agent?.status === 'running',
      ...(model ? { model } : {}),
      ...(reasoningEffort ? { reasoningEffort } : {}),
      ...(preset ? { preset } : {}),
      ...(permission && agent ? { network: permission.network(id) } : {}),
      plan: session.last(PLAN_EVENT)?.data.active === true,
      ...(meta.parentSession ? { parentSession: meta.parentSession } : {}),
      ...(meta.forkedFrom ? { forkedFrom: meta.forkedFrom } : {}),
    }
  }

  /** The events of `id` after sequence number `afterSeq` (all without it): what was published, or what is stored. */
  async events(id: string, afterSeq = -1): Promise<SessionEvent[]> {
    const live = this.home.sessions.get(id)
    const events = live ? this.home.sessions.publishedEvents(live) : (await this.stored(id))?.events
    if (!events) throw notFound(id)
    return events.filter((e) => e.seq > afterSeq)
  }

  /** Tokens, cost per turn and in all, and context use of the whole session. */
  async usage(id: string): Promise<UsageReport> {
    return this.meter(await this.events(id))
  }

  /** Tokens, cost and context use of `events` (a turn, a run), priced from today's model catalog. */
  meter(events: readonly SessionEvent[]): UsageReport {
    const llm = this.home.get('llm')
    return meterUsage(events, (provider, model) => llm?.modelInfo(provider, model))
  }

  /**
   * Sets the title, trimmed (`ctx.sessionTitles.rename`); a blank one is
   * `invalid` naming `title`. A stored session is opened for it and closed
   * again. Resolves with the title set.
   */
  async rename(id: string, title: string): Promise<string> {
    const titles = this.home.get('sessionTitles')
    if (!titles) throw unavailable('renaming a session', 'session-titles', 'title')
    const trimmed = typeof title === 'string' ? title.trim() : ''
    if (!trimmed) throw invalid('title', 'the title must be a non-empty string')
    const wasOpen = this.home.agents.get(id) !== undefined
    const { agent } = await this.resume(id)
    titles.rename(agent.session, trimmed)
    if (!wasOpen) await this.close(id)
    return trimmed
  }

  /**
   * Changes the model settings of one session, resuming it if needed. Model
   * and effort are logged as `conversation/settings`, the preset and network
   * by the permission plugin, plan mode by the plan-mode plugin: all hold after resume.
   */
  async configure(id: string, settings: SessionSettings): Promise<void> {
    const permission =
      settings.preset || settings.network ? this.permission(settings.preset ? 'preset' : 'network') : undefined
    const planMode = this.home.get('planMode')
    if (settings.plan !== undefined && !planMode) throw unavailable('plan mode', 'plan-mode', 'plan')
    const route = settings.model ? this.route(settings.model) : {}
    const { agent } = await this.resume(id)
    if (settings.model || settings.reasoningEffort)
      this.setModel(agent, {
        ...route,
        ...(settings.reasoningEffort ? { reasoningEffort: settings.reasoningEffort } : {}),
      })
    if (settings.preset) permission?.setPreset(id, settings.preset)
    if (settings.network) permission?.setNetwork(id, settings.network)
    if (settings.plan !== undefined) planMode?.set(agent.session, settings.plan)
  }

  /** Gives the agent a model or effort and logs its settings (`conversation/settings`), read back on resume. */
  private setModel(agent: Agent, change: Partial<AgentOptions>): void {
    agent.options = { ...agent.options, ...change }
    const { provider, model, reasoningEffort } = agent.options
    agent.session.append(
      SETTINGS_EVENT,
      { provider, model, ...(reasoningEffort ? { reasoningEffort } : {}) },
      {
        ignorable: true,
      },
    )
  }

  /**
   * Sends `message` to an open session and waits for the turn it starts to
   * end; resolves with the events logged meanwhile. While the session runs a
   * turn, a compaction or earlier prompts, the message is queued (`onQueued`
   * is called at once with its place in the queue, 1 first) and sent when
   * they have ended. A queued prompt that `cancel` dropped, or whose session
   * closed, resolves with no events.
   */
  prompt(id: string, message: Message, options: PromptOptions = {}): Promise<SessionEvent[]> {
    const agent = this.agent(id, NOT_OPEN)
    const ahead = this.tails.get(id)
    const queued = ahead !== undefined || agent.status === 'running'
    const ticket = { dropped: false }
    let waiting = this.waiting.get(id)
    if (queued) {
      if (!waiting) this.waiting.set(id, (waiting = new Set()))
      waiting.add(ticket)
      options.onQueued?.(waiting.size)
    }
    const run = (async () => {
      if (queued) {
        try {
          await ahead
          while (agent.status === 'running') await agent.whenIdle()
        } finally {
          waiting?.delete(ticket)
          if (waiting?.size === 0 && this.waiting.get(id) === waiting) this.waiting.delete(id)
        }
        if (ticket.dropped || this.home.agents.get(id) !== agent) return []
      }
      const from = agent.session.nextSeq
      agent.followup(message)
      await agent.whenIdle()
      return agent.session.events.filter((e) => e.seq >= from)
    })()
    this.queueBehind(id, run)
    return run
  }

  /**
   * What the user can call as `/name args`: in an open session's workspace, or
   * in a folder before any session exists there (none without ctx.commands).
   */
  commands(where: { sessionId: string } | { cwd: string }): CommandInfo[] {
    const cwd = 'cwd' in where ? where.cwd : this.agent(where.sessionId).session.meta.cwd
    return this.home.get('commands')?.list(cwd) ?? []
  }

  /**
   * Adds `message` to the running turn of `id`: the agent delivers it with
   * the next step's request. A session that is not running a turn is refused
   * (send a prompt instead).
   */
  steer(id: string, message: Message): void {
    const agent = this.agent(id, NOT_OPEN)
    if (agent.status !== 'running' || !agent.session.turnState().open)
      throw invalid(
        'sessionId',
        `session ${id} is not running a turn, so there is nothing to steer; send the message as a prompt instead`,
      )
    agent.steer(message)
  }

  /** Shortens the history of an open, idle session (`ctx.compaction`); refused `busy` while it works. */
  async compact(id: string): Promise<CompactOutcome> {
    const compaction = this.home.get('compaction')
    if (!compaction) throw unavailable('compaction', 'compaction')
    const agent = this.agent(id)
    if (this.tails.has(id) || agent.status === 'running')
      throw busy(id, `session ${id} is already running a prompt; wait for it or call session/cancel`)
    const run = compaction.compact(agent, { reason: 'manual' }).then(
      (outcome): CompactOutcome => ({
        compacted: outcome.compacted,
        replaced: outcome.replaced,
        ...(outcome.error ? { error: outcome.error } : {}),
      }),
    )
    this.queueBehind(id, run)
    return run
  }

  /** Makes `work` the last work of the session here: prompts that come later wait for it. */
  private queueBehind(id: string, work: Promise<unknown>): void {
    const tail: Promise<void> = work.then(
      () => this.settled(id, tail),
      () => this.settled(id, tail),
    )
    this.tails.set(id, tail)
  }

  private settled(id: string, tail: Promise<void>): void {
    if (this.tails.get(id) === tail) this.tails.delete(id)
  }

  /** Cancels the running turn of `id`, if any, and drops its queued prompts; an unknown id is refused. */
  async cancel(id: string): Promise<void> {
    const agent = this.home.agents.get(id)
    for (const ticket of this.waiting.get(id) ?? []) ticket.dropped = true
    if (agent) agent.cancel('user')
    else if (!this.home.sessions.get(id) && !(await this.stored(id))) throw notFound(id)
  }

  /** Closes the session here (its agent stops; the log is saved and sealed). */
  async close(id: string): Promise<void> {
    const agent = this.home.agents.get(id)
    const session = this.home.sessions.get(id)
    if (agent) await this.home.agents.dispose(agent)
    else if (session) await this.home.sessions.close(session)
    else if (!(await this.stored(id))) throw notFound(id)
  }

  /**
   * Closes the session here, then deletes its log and those of its subagent
   * sessions. A session another process holds is refused (`busy`).
   */
  async delete(id: string): Promise<string[]> {
    const wasOpen = this.home.agents.get(id) !== undefined || this.home.sessions.get(id) !== undefined
    if (wasOpen) await this.close(id)
    const persistence = this.home.get('sessionPersistence')
    if (!persistence) {
      if (wasOpen) return []
      throw notFound(id)
    }
    try {
      const catalog = this.home.get('sessionCatalog')
      const removed = catalog ? await catalog.remove(id) : await this.removeTree(persistence, id)
      // The catalog removes nothing, quietly, for an id it does not know.
      if (removed.length === 0 && !wasOpen) throw notFound(id)
      return removed
    } catch (error) {
      if (error instanceof Error && error.name === 'SessionNotFoundError') {
        if (wasOpen) return []
        throw notFound(id)
      }
      if (error instanceof Error && (error.name === 'SessionBusyError' || error.name === 'SessionInUseError'))
        throw busy(id, error.message)
      throw error
    }
  }

  /** Without the catalog: the storage's headers say which sessions are children. */
  private async removeTree(persistence: SessionPersistence, id: string): Promise<string[]> {
    const children = (await persistence.list()).filter((s) => s.parentSession === id)
    const removed: string[] = []
    for (const child of children) removed.push(...(await this.removeTree(persistence, child.id)))
    await persistence.remove(id as SessionId)
    return [...removed, id]
  }
}

/** Resume overrides from the log: the latest of the settings a user chose and the last request's. */
function loggedSettings(events: readonly SessionEvent[]): Partial<AgentOptions> {
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i] as SessionEvent
    if (event.type !== SETTINGS_EVENT && event.type !== 'request/header') continue
    const { provider, model, reasoningEffort } = event.data as SessionEvent<'conversation/settings'>['data']
    return { provider, model, ...(reasoningEffort ? { reasoningEffort } : {}) }
  }
  return {}
}
