import { type Context, Schema, ScopedRegistry, Service } from '@dsh/cordis'

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

export interface PromptSection {
  /** Unique among live sections, e.g. `tool:bash`. */
  name: string
  /** Lower renders first: identity -100, persona 0, tool guidance 100-199, instructions 200+. */
  order: number
  text: string | ((target: PromptTarget) => string | undefined)
  /** Render the text as it is, without filling `{{name}}`: for text users wrote (AGENTS.md, skills). */
  literal?: boolean
}

type Variable = (target: PromptTarget) => string | undefined

export interface SystemPromptConfig {
  persona: string
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

  constructor(ctx: Context, config: SystemPromptConfig) {
    super(ctx, 'systemPrompt')
    if (config.persona.trim()) {
      this.section(ctx, { name: 'deployment:persona', order: 0, text: config.persona })
    }
  }

  section(ctx: Context, section: PromptSection): () => void {
    if (!Number.isFinite(section.order)) throw new Error(`prompt section "${section.name}" needs a finite order`)
    return this.sections.register(ctx, section.name, { ...section, serial: this.serial++ })
  }

  variable(ctx: Context, name: string, value: Variable): () => void {
    return this.variables.register(ctx, name, value)
  }

  /** Renders every section in order, `{{name}}` filled in; empty sections are dropped. */
  render(target: PromptTarget): string {
    const values: Record<string, string | undefined> = {
      cwd: target.cwd,
      model: target.model,
      provider: target.provider,
      date: new Date().toISOString().slice(0, 10),
    }
    for (const name of this.variables.keys()) values[name] = this.variables.get(name)?.(target)
    const parts: string[] = []
    const ordered = this.sections.values().sort((a, b) => a.order - b.order || a.serial - b.serial)
    for (const section of ordered) {
      const raw = typeof section.text === 'function' ? section.text(target) : section.text
      if (!raw?.trim()) continue
      parts.push((section.literal ? raw : fill(raw, values, section.name)).trim())
    }
    return parts.join('\n\n')
  }
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
    .default(
      'You are dsh, a coding agent working in {{cwd}} with the {{model}} model. Use the tools to inspect and change files and to run commands. Keep answers short and concrete.',
    )
    .description(
      'The first section of every system prompt. {{cwd}}, {{model}}, {{provider}} and {{date}} are filled in.',
    ),
})

/** Provides `ctx.systemPrompt`. */
export function apply(ctx: Context, config: SystemPromptConfig) {
  ctx.plugin(SystemPrompt, config)
}
