import type {} from '@dsh/agent'
import { type Context, Schema, Service } from '@dsh/cordis'
import { completeText, type Message, sideCallFields } from '@dsh/llm'
import { type Session, type SessionEvent, textMessage } from '@dsh/session'

/** The `session/title` event is a wire type (`@dsh/wire-types`). */
export type { TitleSource } from '@dsh/wire-types'

declare module '@dsh/cordis' {
  interface Context {
    sessionTitles: SessionTitles
  }
}

export interface SessionTitlesConfig {
  enabled: boolean
  provider?: string
  model?: string
  maxTokens: number
  maxInputChars: number
  maxTitleChars: number
  childSessions: boolean
  prompt: string
}

export const DEFAULT_PROMPT =
  'You name conversations with a coding agent. Reply with a short title, at most six words, for the conversation that ' +
  "starts with the user's message below. Use the language of the message. Reply with the title only: no quotes, no " +
  'trailing punctuation, no explanation.'

export const Config: Schema<SessionTitlesConfig> = Schema.object({
  enabled: Schema.boolean()
    .default(true)
    .description(
      "Title new sessions with a model call when the user's first message arrives. `rename` works either way.",
    ),
  ...sideCallFields('title call', 60, "the session's agent's"),
  maxInputChars: Schema.natural()
    .min(1)
    .default(4000)
    .description("Characters of the user's first message sent to the title call."),
  maxTitleChars: Schema.natural().min(1).default(80).description('Longer titles are cut at a word boundary.'),
  childSessions: Schema.boolean()
    .default(false)
    .description('Also title sessions that have a parent (subagents, forks).'),
  prompt: Schema.string().default(DEFAULT_PROMPT).description('System prompt of the title call.'),
})

export const TITLE_EVENT = 'session/title'

/** One line, no wrapping quotes or markdown, at most `max` characters; empty when nothing is left. */
export function normalizeTitle(raw: string, max: number): string {
  const line = raw
    .split('\n')
    .map((l) => l.trim())
    .find((l) => l.length > 0)
  if (!line) return ''
  let title = line
    .replace(/^#+\s*/, '')
    .replace(/^title\s*:\s*/i, '')
    .replace(/^["'`*_“”‘’]+|["'`*_“”‘’]+$/g, '')
    .replace(/\s+/g, ' ')
    .replace(/[.。]+$/, '')
    .trim()
  if (title.length > max) {
    const cut = title.slice(0, max - 1)
    const space = cut.lastIndexOf(' ')
    title = `${space > max / 2 ? cut.slice(0, space) : cut}…`
  }
  return title
}

function textOf(message: Message): string {
  return message.content.map((b) => (b.type === 'text' ? b.text : '')).join('')
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

/**
 * `ctx.sessionTitles`: a title for every session, logged as `session/title`.
 * The model names a session once, from the user's first message, on the
 * side: the turn never waits for it, and a failure only leaves the session
 * untitled. A session whose log holds a title is not titled again.
 */
export class SessionTitles extends Service {
  static inject = ['sessions', 'llm']
  private readonly home: Context
  private readonly config: SessionTitlesConfig
  private readonly attempted = new WeakSet<Session>()
  private readonly running = new Map<string, AbortController>()

  constructor(ctx: Context, config: SessionTitlesConfig) {
    super(ctx, 'sessionTitles')
    this.home = ctx
    this.config = config
    ctx.sessions.registerEventType(ctx, TITLE_EVENT)
    ctx.effect(() => () => this.abortAll(), 'session titles: stop title calls')
    ctx.on('app/shutdown', async () => this.abortAll())
    ctx.on('session/closed', async (session) => this.abort(session.id))
    if (config.enabled) ctx.on('session/event', (session, event) => this.onEvent(session, event))
  }

  /** The session's current title, if it has one. */
  titleOf(session: Session): string | undefined {
    return session.last(TITLE_EVENT)?.data.title ?? session.meta.title
  }

  /** Sets the title the user chose; a model title still being generated is dropped. */
  rename(session: Session, title: string): void {
    const clean = normalizeTitle(title, this.config.maxTitleChars)
    if (!clean) throw new Error(`session ${session.id}: a title needs at least one visible character`)
    this.abort(session.id)
    this.attempted.add(session)
    session.append(TITLE_EVENT, { title: clean, source: 'user' })
  }

  private onEvent(session: Session, event: SessionEvent): void {
    if (event.type !== 'user/message' || this.attempted.has(session)) return
    if ((event as SessionEvent<'user/message'>).data.message.source.kind !== 'user') return
    if (session.meta.parentSession && !this.config.childSessions) return
    this.attempted.add(session)
    if (this.titleOf(session) !== undefined) return
    const first = session.events.find(
      (e): e is SessionEvent<'user/message'> =>
        e.type === 'user/message' && (e as SessionEvent<'user/message'>).data.message.source.kind === 'user',
    )
    const text = first ? textOf(first.data.message).trim() : ''
    if (text) void this.generate(session, text)
  }

  private async generate(session: Session, text: string): Promise<void> {
    const controller = new AbortController()
    this.running.set(session.id, controller)
    const logger = this.home.logger('session-titles')
    try {
      const agents = this.home.get('agents')
      const options = agents?.get(session.id)?.options ?? agents?.defaults()
      const provider = this.config.provider ?? options?.provider
      const model = this.config.model ?? options?.model
      if (!provider || !model)
        throw new Error('no model is configured for titles (set provider and model in the session-titles config)')
      const reply = await completeText(this.home.llm, {
        provider,
        model,
        reasoningEffort: 'off',
        maxTokens: this.config.maxTokens,
        purpose: 'title',
        sessionId: session.id,
        signal: controller.signal,
        messages: [
          textMessage('system', this.config.prompt, { kind: 'system' }),
          textMessage('user', text.slice(0, this.config.maxInputChars), { kind: 'user' }),
        ],
      })
      const title = normalizeTitle(reply.text, this.config.maxTitleChars)
      if (!title) throw new Error('the model returned an empty title')
      if (
        controller.signal.aborted ||
        this.home.sessions.get(session.id) !== session ||
        this.titleOf(session) !== undefined
      )
        return
      session.append(TITLE_EVENT, { title, source: 'model' })
    } catch (error) {
      if (!controller.signal.aborted) logger.warn('session %s stays untitled: %s', session.id, errorText(error))
    } finally {
      if (this.running.get(session.id) === controller) this.running.delete(session.id)
    }
  }

  private abort(id: string): void {
    this.running.get(id)?.abort()
    this.running.delete(id)
  }

  private abortAll(): void {
    for (const controller of this.running.values()) controller.abort()
    this.running.clear()
  }
}

export const name = 'session-titles'
export const inject = ['sessions', 'llm']

/** Provides `ctx.sessionTitles`. */
export function apply(ctx: Context, config: SessionTitlesConfig) {
  ctx.plugin(SessionTitles, config)
}
