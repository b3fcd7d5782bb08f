import { realpathSync } from 'node:fs'
import path from 'node:path'
import type {} from '@dsh/agent'
import { type Context, Schema, Service, stringList } from '@dsh/cordis'
import { projectFolders } from '@dsh/system-prompt'
import type { CommandInfo, Message } from '@dsh/wire-types'
import { discoverPromptFiles, fillArguments, readPromptFile } from './prompt-files.ts'

export type { CommandInfo } from '@dsh/wire-types'
export { fillArguments, splitArguments } from './prompt-files.ts'

declare module '@dsh/cordis' {
  interface Context {
    commands: Commands
  }
}

/** A provider of commands (prompt files, skills, a plugin's own); the first source holding a name wins. */
export interface CommandSource {
  list(cwd: string): CommandInfo[]
  /** The prompt `/name args` stands for, or undefined when this source has no such command. */
  expand(name: string, args: string, cwd: string): string | undefined
}

export interface CommandsConfig {
  roots: string[]
  maxFileBytes: number
}

export const Config: Schema<CommandsConfig> = Schema.object({
  roots: stringList(
    'Folders of Markdown prompt files (<root>/<name>.md, subfolders allowed), highest priority first. ' +
      'Relative roots resolve against the project root and are the project scope; absolute ones are the user scope. ' +
      'The base bundle adds $DSH_HOME/commands. Remove a root to stop reading it.',
    ['.dsh/commands', '.claude/commands'],
  ),
  maxFileBytes: Schema.natural().min(1).default(262_144).description('A larger command file is skipped.'),
})

const COMMAND_LINE = /^\/([A-Za-z0-9][A-Za-z0-9._-]{0,63})(?:[ \t]+([\s\S]*))?$/

/** `/name args` read from a message's text, or undefined when the text is not a command call. */
export function parseCommandLine(text: string): { name: string; args: string } | undefined {
  const match = COMMAND_LINE.exec(text.trim())
  return match ? { name: match[1] as string, args: (match[2] ?? '').trim() } : undefined
}

/** Markdown prompt files from the configured roots; a file that cannot be read is skipped with a warning, once. */
function promptFileSource(ctx: Context, config: CommandsConfig): CommandSource {
  const logger = ctx.logger('commands')
  const reported = new Set<string>()
  const rootsFor = (cwd: string) => {
    const project = projectFolders(cwd).root ?? path.resolve(cwd)
    return config.roots.map((root) => ({
      folder: path.resolve(project, root),
      scope: path.isAbsolute(root) ? 'user' : 'project',
    }))
  }
  const discover = (cwd: string) => {
    const found = discoverPromptFiles(rootsFor(cwd), config.maxFileBytes)
    for (const { file, why } of found.skipped) {
      if (reported.has(why)) continue
      reported.add(why)
      logger.warn('command file %s skipped: %s', file, why)
    }
    return found.commands
  }
  return {
    list: (cwd) =>
      discover(cwd).map(({ name, description, argumentHint, scope }) => ({
        name,
        description,
        ...(argumentHint ? { argumentHint } : {}),
        scope,
      })),
    expand: (name, args, cwd) => {
      const command = discover(cwd).find((c) => c.name === name)
      if (!command) return undefined
      try {
        const parsed = readPromptFile(command.file, realRoot(command.root), config.maxFileBytes)
        return fillArguments(parsed.body.trim(), args)
      } catch (error) {
        logger.warn('command /%s cannot be read: %s', name, error instanceof Error ? error.message : String(error))
        return undefined
      }
    },
  }
}

/**
 * `ctx.commands`: what a user can call as `/name args`. Sources register
 * here; a user message whose whole text is `/name args` naming a known
 * command is replaced by that command's prompt before it is logged (the
 * log keeps what was typed in the message's source), whichever surface
 * sent it. Text that only looks like a command (`/etc/hosts is empty`)
 * stays as written.
 */
export class Commands extends Service {
  static inject = ['agents']

  private readonly sources: { id: string; source: CommandSource }[] = []

  constructor(ctx: Context, config: CommandsConfig) {
    super(ctx, 'commands')
    this.sources.push({ id: 'prompt-files', source: promptFileSource(ctx, config) })
    ctx.on('agent/user-message', async (agent, _given, next) => {
      const message = await next()
      return this.expandMessage(message, agent.session.meta.cwd) ?? message
    })
  }

  /** Adds a source for as long as `owner` lives; sources registered first win a name. */
  register(owner: Context, id: string, source: CommandSource): void {
    owner.effect(() => {
      const entry = { id, source }
      this.sources.push(entry)
      return () => {
        const at = this.sources.indexOf(entry)
        if (at >= 0) this.sources.splice(at, 1)
      }
    })
  }

  /** Every command callable in `cwd`, by name; a name shadowed by an earlier source is left out. */
  list(cwd: string): CommandInfo[] {
    const seen = new Map<string, CommandInfo>()
    for (const { source } of this.sources) {
      for (const info of source.list(cwd)) if (!seen.has(info.name)) seen.set(info.name, info)
    }
    return [...seen.values()].sort((a, b) => a.name.localeCompare(b.name))
  }

  /** The prompt for a `/name args` line, or undefined when it names no command here. */
  expand(text: string, cwd: string): { name: string; args: string; prompt: string } | undefined {
    const call = parseCommandLine(text)
    if (!call) return undefined
    for (const { source } of this.sources) {
      const prompt = source.expand(call.name, call.args, cwd)
      if (prompt !== undefined) return { ...call, prompt }
    }
    return undefined
  }

  private expandMessage(message: Message, cwd: string): Message | undefined {
    if (message.role !== 'user' || message.source.kind !== 'user' || message.source.command) return undefined
    const [only, ...rest] = message.content
    if (rest.length || only?.type !== 'text') return undefined
    const expanded = this.expand(only.text, cwd)
    if (!expanded) return undefined
    return {
      ...message,
      content: [{ type: 'text', text: expanded.prompt }],
      source: { kind: 'user', command: { name: expanded.name, args: expanded.args } },
    }
  }
}

export const name = 'commands'
export const inject = ['agents']

/** Provides `ctx.commands`, with the prompt files of the configured roots as its first source. */
export function apply(ctx: Context, config: CommandsConfig) {
  ctx.plugin(Commands, config)
}

function realRoot(folder: string): string {
  try {
    return realpathSync(folder)
  } catch {
    return folder
  }
}
