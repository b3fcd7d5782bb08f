import { existsSync, readFileSync } from 'node:fs'
import { type Context, emitIsolated, Schema, Service, stringValue } from '@dsh/cordis'
import { type LlmFailure, type Message, REASONING_EFFORTS, type ReasoningEffort } from '@dsh/llm'
import { isPlainObject, parseYaml } from '@dsh/loader/compose'
import { closersForOpenTurn, type Session, type SessionEvent, type SessionId } from '@dsh/session'
import type {} from '@dsh/cmdline'
import type { OpenedLog } from '@dsh/session-persistence'
import type {
  Agent,
  AgentDelta,
  AgentFactory,
  AgentOptions,
  AgentStatus,
  CreateAgentOptions,
  PreStepDecision,
  RequestConfig,
  RequestErrorDecision,
  StepInfo,
  TurnOutcome,
} from './types.ts'

declare module '@dsh/cordis' {
  interface Context {
    agents: AgentRegistry
  }
  interface Events {
    /** @mode emit (isolated): an agent was created or resumed. */
    'agent/created'(agent: Agent): void
    /** @mode emit (isolated): an agent was disposed. */
    'agent/disposed'(agent: Agent): void
    /** @mode emit (isolated): the agent became running or idle. */
    'agent/status'(agent: Agent, status: AgentStatus): void
    /** @mode emit (isolated): a piece of a reply as it streams. */
    'agent/delta'(agent: Agent, delta: AgentDelta): void
    /** @mode emit (isolated): a turn ended. */
    'agent/turn-end'(agent: Agent, outcome: TurnOutcome): void
    /** @mode emit (isolated): a turn failed on something other than the model (a plugin threw). */
    'agent/error'(agent: Agent, error: unknown): void
    /** @mode waterfall: before each step; return `{kind:'reject'}` to end the turn instead. */
    'agent/pre-step'(agent: Agent, step: StepInfo, next: () => Promise<PreStepDecision>): Promise<PreStepDecision>
    /** @mode waterfall: a user message about to be logged for a step; a listener may return a rewritten one (`/command` expansion). */
    'agent/user-message'(agent: Agent, message: Message, next: () => Promise<Message>): Promise<Message>
    /** @mode waterfall: the model settings of the step's request. */
    'agent/request'(agent: Agent, step: StepInfo, next: () => Promise<RequestConfig>): Promise<RequestConfig>
    /** @mode waterfall: a model call failed; return `{kind:'retry', delayMs}` to try again. */
    'agent/request-error'(
      agent: Agent,
      info: StepInfo & { attempt: number; provider: string; failure: LlmFailure; outputSeen: boolean },
      next: () => Promise<RequestErrorDecision>,
    ): Promise<RequestErrorDecision>
    /** @mode serial: the turn is about to end; a listener may `agent.steer(...)` to keep it going. */
    'agent/turn-stopping'(agent: Agent, info: { turn: number; signal: AbortSignal }): Promise<void>
  }
}

export interface AgentRegistryConfig {
  provider: string
  model: string
  reasoningEffort?: ReasoningEffort
  maxTokens?: number
  /** A settings document whose `agent:` section overrides provider, model and reasoningEffort. */
  settingsFile?: string
}

/**
 * `ctx.agents`: creates, resumes, finds and disposes agents. The driver comes
 * from the factory the agent loop registers; resume reads the log through
 * `ctx.sessionPersistence` and closes a turn a crash left open.
 */
export class AgentRegistry extends Service {
  static inject = ['sessions']
  private readonly home: Context
  private readonly config: AgentRegistryConfig
  private factory: AgentFactory | undefined
  private factoryOwner: symbol | undefined
  private readonly live = new Map<string, Agent>()

  constructor(ctx: Context, config: AgentRegistryConfig) {
    super(ctx, 'agents')
    this.home = ctx
    this.config = config
    ctx.on('app/shutdown', () => this.disposeAll())
    ctx.effect(() => () => void this.disposeAll(), 'dispose agents')
  }

  /** The settings document this registry reads (`settingsFile` of its config), if any. */
  settingsFile(): string | undefined {
    return this.config.settingsFile
  }

  /** The default model settings: config, overridden by the settings file's `agent:` section (read each time). */
  defaults(): AgentOptions {
    const options: AgentOptions = { provider: this.config.provider, model: this.config.model }
    if (this.config.reasoningEffort) options.reasoningEffort = this.config.reasoningEffort
    if (this.config.maxTokens) options.maxTokens = this.config.maxTokens
    if (this.config.settingsFile) Object.assign(options, readAgentSettings(this.config.settingsFile))
    return options
  }

  setFactory(ctx: Context, factory: AgentFactory): () => void {
    if (this.factory) throw new Error('an agent driver is already registered')
    // Functions read back through the cordis service proxy come wrapped, so ownership is tracked by a token.
    const owner = Symbol('agent factory')
    this.factory = factory
    this.factoryOwner = owner
    const off = () => {
      if (this.factoryOwner !== owner) return
      this.factory = undefined
      this.factoryOwner = undefined
    }
    ctx.effect(() => off, 'agent factory')
    return off
  }

  /** Whether a driver (an agent loop) is registered, so that `create` and `resume` can start agents. */
  get driven(): boolean {
    return this.factory !== undefined
  }

  get(id: string): Agent | undefined {
    return this.live.get(id)
  }

  list(): Agent[] {
    return [...this.live.values()]
  }

  async create(options: CreateAgentOptions): Promise<Agent> {
    if (!this.factory) throw noDriver()
    const session = this.home.sessions.create({
      cwd: options.cwd,
      ...(options.sessionId ? { id: options.sessionId } : {}),
      ...(options.parentSession ? { parentSession: options.parentSession } : {}),
      ...(options.title ? { title: options.title } : {}),
    })
    // The id is announced once this returns: its log (the header, for now) must exist by then.
    if (options.waitForLog !== false) await this.home.sessions.flush(session)
    return this.start(session, options.options)
  }

  /** Reopens a stored session and continues it; a turn the last run left open is closed as interrupted first. */
  async resume(id: SessionId, overrides?: Partial<AgentOptions>): Promise<{ agent: Agent; problems: string[] }> {
    if (this.live.has(id)) throw new Error(`session ${id} is already open in this process`)
    const persistence = this.home.get('sessionPersistence')
    if (!persistence) throw new Error('no session storage is configured, so sessions cannot be resumed')
    // Before reading: a session another process has open must not be read as if it had crashed mid-turn.
    await persistence.claim(id)
    let opened: OpenedLog
    let events: SessionEvent[]
    try {
      opened = await persistence.open(id)
      events = this.home.sessions.checkLoadable(opened.events, opened.file)
    } catch (error) {
      await persistence.release(id).catch(() => {})
      throw error
    }
    const session = this.home.sessions.create({
      id: opened.meta.id,
      cwd: opened.meta.cwd,
      createdAt: opened.meta.createdAt,
      ...(opened.meta.parentSession ? { parentSession: opened.meta.parentSession } : {}),
      ...(opened.meta.forkedFrom ? { forkedFrom: opened.meta.forkedFrom } : {}),
      ...(opened.meta.title ? { title: opened.meta.title } : {}),
      seed: events,
      seedStored: true,
      // Parsed from the log for this session alone: no copy needed.
      adoptSeed: true,
    })
    const problems = opened.problems.map((p) => `${opened.file}:${p.line}: ${p.message}`)
    const closers = closersForOpenTurn(events)
    for (const closer of closers) session.append(closer.type, closer.data as never)
    if (closers.length)
      problems.push(`${opened.file}: the last run stopped mid-turn; the turn was closed as interrupted`)
    const last = [...events].reverse().find((e) => e.type === 'request/header')
    const fromLog = last ? (last.data as AgentOptions) : undefined
    const base = fromLog ? { provider: fromLog.provider, model: fromLog.model } : {}
    return { agent: this.start(session, { ...base, ...overrides }), problems }
  }

  private start(session: Session, overrides: Partial<AgentOptions> = {}): Agent {
    if (!this.factory) throw noDriver()
    const options = { ...this.defaults(), ...stripUndefined(overrides) }
    const agent = this.factory(this.home, session, options)
    this.live.set(agent.id, agent)
    void emitIsolated(this.home, 'agent/created', agent)
    return agent
  }

  /** Stops the agent (cancelling a running turn), saves and closes its session. */
  async dispose(agent: Agent): Promise<void> {
    if (this.live.get(agent.id) !== agent) return
    this.live.delete(agent.id)
    agent.cancel('shutdown')
    await agent.stop()
    await this.home.sessions.close(agent.session)
    void emitIsolated(this.home, 'agent/disposed', agent)
  }

  async disposeAll(): Promise<void> {
    await Promise.all(this.list().map((agent) => this.dispose(agent)))
  }
}

const noDriver = () => new Error('no agent driver is loaded (is the agent-loop plugin enabled?)')

/**
 * The user's settings document (`settings.yaml` in the home): a mapping of
 * sections (`agent:` here, `web:` for the web app). Empty when the file is
 * missing or blank; throws naming the file when it is not a mapping.
 */
export function readSettingsDocument(file: string): Record<string, unknown> {
  if (!existsSync(file)) return {}
  const doc = parseYaml(readFileSync(file, 'utf8'), file)
  if (doc === null || doc === undefined) return {}
  if (!isPlainObject(doc)) throw new Error(`${file}: a settings document must be a mapping`)
  return doc
}

/** The `agent:` section of a settings document: `{provider?, model?, reasoningEffort?}`. */
export function readAgentSettings(file: string): Partial<AgentOptions> {
  const section = readSettingsDocument(file).agent
  if (section === undefined || section === null) return {}
  if (!isPlainObject(section))
    throw new Error(`${file}: "agent" must be a mapping of provider, model and reasoningEffort`)
  const out: Partial<AgentOptions> = {}
  for (const [key, value] of Object.entries(section)) {
    if (key === 'provider' || key === 'model') {
      if (typeof value !== 'string' || !value.trim())
        throw new Error(`${file}: agent.${key} must be a non-empty string`)
      out[key] = value.trim()
    } else if (key === 'reasoningEffort') {
      if (!REASONING_EFFORTS.includes(value as ReasoningEffort))
        throw new Error(`${file}: agent.reasoningEffort must be one of ${REASONING_EFFORTS.join(', ')}`)
      out.reasoningEffort = value as ReasoningEffort
    } else {
      throw new Error(`${file}: unknown setting agent.${key} (known: provider, model, reasoningEffort)`)
    }
  }
  return out
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>
}

export const Config: Schema<AgentRegistryConfig> = Schema.object({
  provider: stringValue('The model route new agents use.', 'deepseek'),
  model: stringValue('The model new agents use.', 'deepseek-v4-flash'),
  reasoningEffort: Schema.union(REASONING_EFFORTS).description('Reasoning effort; the route default when unset.'),
  maxTokens: Schema.natural().description('Output token cap per request; the route default when unset.'),
  settingsFile: Schema.string().description(
    'A YAML settings document; its `agent:` section (provider, model, reasoningEffort) overrides this config.',
  ),
})
