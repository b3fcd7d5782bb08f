import { readlinkSync } from 'node:fs'
import { type Context, Schema, ScopedRegistry, Service } from '@dsh/cordis'
import { DEFAULT_GUIDANCE, DEFAULT_PERSONA } from './defaults.ts'

export { projectFolders, type ProjectFolders } from './project.ts'

declare module '@dsh/cordis' {
  interface Context {
    systemPrompt: SystemPrompt
  }
}

/** What a prompt is rendered for; also the built-in `{{variables}}`. */
export interface PromptTarget {
  sessionId: string
  cwd: string
  model: string
  provider: string
}

/** What a section's text function sees: the target plus the calendar day the prompt is rendered for. */
export interface SectionTarget extends PromptTarget {
  /** `YYYY-MM-DD` in `timeZone`. */
  date: string
  /** An IANA zone name, e.g. `Europe/Berlin`. */
  timeZone: string
}

export interface PromptSection {
  /** Unique among live sections, e.g. `tool:bash`. */
  name: string
  /** Lower renders first: identity -100, persona 0, tool guidance 100-199, environment 150, instructions 200+. */
  order: number
  text: string | ((target: SectionTarget) => string | undefined | Promise<string | undefined>)
  /** Render the text as it is, without filling `{{name}}`: for text users wrote (AGENTS.md, skills). */
  literal?: boolean
  /**
   * A cheap key read at every step. Without it a section is rendered once per
   * session (and again on a new day or another model); with it, also whenever
   * the key changes. Keep keys stable: each change breaks the model's prompt cache.
   */
  refresh?: (target: SectionTarget) => string | undefined
  /** Why a changed `refresh` key changed the prompt, for the session log (e.g. `instructions changed`). */
  reason?: string
}

/** One reason the prompt of a session changed, as logged in `system/prompt-changed`. */
export interface PromptChange {
  section: string
  reason: string
}

/**
 * What one session has rendered so far: each section's key and text. The
 * owner of a session (the agent) keeps one, so the prompt stays byte-stable
 * across its steps and turns.
 */
export class PromptState {
  readonly sections = new Map<string, { key: string; text: string | undefined }>()
  rendered = false
}

type Variable = (target: PromptTarget) => string | undefined

export interface SystemPromptConfig {
  persona: string
  guidance: string
  timeZone: string
}

/**
 * `ctx.systemPrompt`: ordered sections contributed by plugins, rendered into
 * the system message of each step. Sections and variables belong to the
 * plugin that registered them.
 */
export class SystemPrompt extends Service {
  private readonly sections = new ScopedRegistry<PromptSection & { serial: number }>('prompt section')
  private readonly variables = new ScopedRegistry<Variable>('prompt variable')
  private serial = 0
  private readonly timeZone: string
  /** A zone the config names: the day is read through Intl. Otherwise the process's own zone, read from Date. */
  private readonly namedZone: boolean
  /** The clock the calendar day is read from; tests replace it to reach a new day. */
  now: () => Date = () => new Date()

  constructor(ctx: Context, config: SystemPromptConfig) {
    super(ctx, 'systemPrompt')
    // Intl's time zone data costs about 10 ms to load on a cold start, before the first request:
    // the process's own zone needs only Date and the name of the zone.
    this.namedZone = config.timeZone.trim() !== ''
    this.timeZone = this.namedZone ? config.timeZone.trim() : localZoneName()
    if (this.namedZone) {
      try {
        new Intl.DateTimeFormat('en', { timeZone: this.timeZone })
      } catch {
        throw new Error(`system-prompt: timeZone "${config.timeZone}" is not an IANA time zone (e.g. Europe/Berlin)`)
      }
    }
    if (config.persona.trim()) {
      this.section(ctx, { name: 'deployment:persona', order: 0, text: config.persona })
    }
    if (config.guidance.trim()) {
      this.section(ctx, { name: 'tool:guidance', order: 100, text: config.guidance })
    }
  }

  section(ctx: Context, section: PromptSection): () => void {
    if (!Number.isFinite(section.order)) throw new Error(`prompt section "${section.name}" needs a finite order`)
    return this.sections.register(ctx, section.name, { ...section, serial: this.serial++ })
  }

  variable(ctx: Context, name: string, value: Variable): () => void {
    return this.variables.register(ctx, name, value)
  }

  /** The calendar day (`YYYY-MM-DD`) in the prompt's time zone. */
  today(): string {
    if (!this.namedZone) {
      const now = this.now()
      const two = (n: number) => String(n).padStart(2, '0')
      return `${now.getFullYear()}-${two(now.getMonth() + 1)}-${two(now.getDate())}`
    }
    const parts = new Intl.DateTimeFormat('en-CA', {
      timeZone: this.timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
    }).formatToParts(this.now())
    const part = (type: string) => parts.find((p) => p.type === type)?.value ?? ''
    return `${part('year')}-${part('month')}-${part('day')}`
  }

  /** Renders every section in order, `{{name}}` filled in; empty sections are dropped. */
  async render(target: PromptTarget): Promise<string> {
    return (await this.compose(target, new PromptState())).text
  }

  /**
   * Renders the prompt of a session, reusing from `state` every section whose
   * key (day, model, cwd and its own `refresh` key) is unchanged. `changes`
   * says why sections were rendered again; it is empty on the first render.
   */
  async compose(target: PromptTarget, state: PromptState): Promise<{ text: string; changes: PromptChange[] }> {
    const full: SectionTarget = { ...target, date: this.today(), timeZone: this.timeZone }
    const base = [full.date, target.model, target.provider, target.cwd]
    const changes: PromptChange[] = []
    const parts: string[] = []
    let values: Record<string, string | undefined> | undefined
    const ordered = this.sections.values().sort((a, b) => a.order - b.order || a.serial - b.serial)
    const live = new Set<string>()
    for (const section of ordered) {
      live.add(section.name)
      const key = JSON.stringify([...base, section.refresh?.(full) ?? null])
      const cached = state.sections.get(section.name)
      let text = cached?.text
      if (cached?.key !== key) {
        if (state.rendered) changes.push({ section: section.name, reason: whyChanged(cached?.key, key, section) })
        const raw = typeof section.text === 'function' ? await section.text(full) : section.text
        values ??= this.values(full)
        text = raw?.trim() ? (section.literal ? raw : fill(raw, values, section.name)).trim() : undefined
        state.sections.set(section.name, { key, text })
      }
      if (text) parts.push(text)
    }
    for (const name of [...state.sections.keys()]) {
      if (live.has(name)) continue
      state.sections.delete(name)
      changes.push({ section: name, reason: 'section removed' })
    }
    state.rendered = true
    return { text: parts.join('\n\n'), changes }
  }

  private values(target: SectionTarget): Record<string, string | undefined> {
    const values: Record<string, string | undefined> = {
      cwd: target.cwd,
      model: target.model,
      provider: target.provider,
      date: target.date,
      timeZone: target.timeZone,
    }
    for (const name of this.variables.keys()) values[name] = this.variables.get(name)?.(target)
    return values
  }
}

function whyChanged(before: string | undefined, after: string, section: PromptSection): string {
  if (before === undefined) return 'section added'
  const [dayBefore, ...restBefore] = JSON.parse(before) as unknown[]
  const [dayAfter, ...restAfter] = JSON.parse(after) as unknown[]
  if (dayBefore !== dayAfter) return 'new day'
  if (JSON.stringify(restBefore.slice(0, 3)) !== JSON.stringify(restAfter.slice(0, 3)))
    return 'model or workspace changed'
  return section.reason ?? `${section.name} changed`
}

function fill(text: string, values: Record<string, string | undefined>, where: string): string {
  return text.replace(/\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}/g, (_match, name: string) => {
    if (!Object.hasOwn(values, name))
      throw new Error(`prompt section "${where}" uses {{${name}}}, which no plugin provides`)
    return values[name] ?? ''
  })
}

export const name = 'system-prompt'
export const Config: Schema<SystemPromptConfig> = Schema.object({
  persona: Schema.string()
    .default(DEFAULT_PERSONA)
    .description(
      'The first section of every system prompt: who the agent is and how it works; empty to leave it out. ' +
        '{{cwd}}, {{model}}, {{provider}}, {{date}} and {{timeZone}} are filled in, but keep what differs between ' +
        'sessions out of it: the same text in every session lets the provider reuse its prompt cache.',
    ),
  guidance: Schema.string()
    .default(DEFAULT_GUIDANCE)
    .description('How to use the tools (section `tool:guidance`, order 100); empty to leave it out.'),
  timeZone: Schema.string()
    .default('')
    .description(
      "The IANA time zone of {{date}} and of the calendar day the prompt is kept for; empty: the process's zone.",
    ),
})

/** Provides `ctx.systemPrompt`. */
export function apply(ctx: Context, config: SystemPromptConfig) {
  ctx.plugin(SystemPrompt, config)
}

/**
 * The name of the process's time zone without Intl: `TZ` when it names a
 * zone, else the zone `/etc/localtime` links to, else the offset from UTC.
 */
function localZoneName(): string {
  const fromEnv = process.env.TZ?.trim()
  if (fromEnv && !fromEnv.startsWith(':') && !fromEnv.startsWith('/')) return fromEnv
  try {
    const target = readlinkSync('/etc/localtime')
    const at = target.indexOf('zoneinfo/')
    if (at >= 0) return target.slice(at + 'zoneinfo/'.length)
  } catch {
    // not a link (or no file): name the offset instead
  }
  const offset = -new Date().getTimezoneOffset()
  if (offset === 0) return 'UTC'
  const hours = String(Math.floor(Math.abs(offset) / 60)).padStart(2, '0')
  const minutes = String(Math.abs(offset) % 60).padStart(2, '0')
  return `UTC${offset > 0 ? '+' : '-'}${hours}:${minutes}`
}
