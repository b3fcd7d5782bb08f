import { existsSync } from 'node:fs'
import path from 'node:path'
import { type Context, Schema, stringList, stringValue } from '@dsh/cordis'
import type {} from '@dsh/session'
import { type PromptTarget, projectFolders } from '@dsh/system-prompt'
import { type InstructionFile, loadInstructions, renderInstructions } from './load.ts'
import { describe } from './read.ts'

export { loadInstructions, renderInstructions, type InstructionFile } from './load.ts'
export { readCapped, type ReadOutcome } from './read.ts'

export interface InstructionsConfig {
  homeFile: string
  fileNames: string[]
  fallbackFileNames: string[]
  maxFileBytes: number
  maxTotalBytes: number
  order: number
}

export const Config: Schema<InstructionsConfig> = Schema.object({
  homeFile: stringValue(
    'The user-wide instruction file, e.g. $DSH_HOME/AGENTS.md (the base bundle sets it); empty for none.',
  ),
  fileNames: stringList(
    'The instruction file names looked for in each folder from the project root down to the workspace; each one found loads, in this order.',
    ['AGENTS.md'],
  ),
  fallbackFileNames: stringList(
    'Read in a folder where none of fileNames exists (CLAUDE.md for projects written for Claude Code); empty: never.',
    ['CLAUDE.md'],
  ),
  maxFileBytes: Schema.natural()
    .min(1)
    .default(32_768)
    .description('At most this many bytes of one file reach the prompt; a longer file is cut and the prompt says so.'),
  maxTotalBytes: Schema.natural()
    .min(1)
    .default(65_536)
    .description(
      'At most this many bytes of all files together; files after the budget is spent are cut or left out, and the prompt says so.',
    ),
  order: Schema.number().default(200).description('Where the section goes in the system prompt (lower comes first).'),
})

export const name = 'instructions'
export const inject = ['systemPrompt']

/**
 * AGENTS.md files (user-wide, then the project's from its root down to the
 * workspace) as a system-prompt section. Read again at the start of every
 * turn, so edits reach the model at its next turn.
 */
export function apply(ctx: Context, config: InstructionsConfig) {
  const logger = ctx.logger('instructions')
  const reported = new Set<string>()
  const cache = new Map<string, string | undefined>()

  const build = (cwd: string): string | undefined => {
    const files: Array<Omit<InstructionFile, 'outcome'>> = []
    if (config.homeFile) files.push({ path: path.resolve(config.homeFile), scope: 'user' })
    for (const folder of projectFolders(cwd).folders) {
      const primary = config.fileNames.map((fileName) => path.join(folder, fileName))
      const names = primary.some((file) => existsSync(file))
        ? primary
        : config.fallbackFileNames.map((fileName) => path.join(folder, fileName))
      for (const file of names) files.push({ path: file, scope: 'project' })
    }
    const loaded = loadInstructions(files, config)
    for (const file of loaded) {
      const { outcome } = file
      if (outcome.kind === 'unreadable' && !reported.has(outcome.key)) {
        reported.add(outcome.key)
        logger.warn('%s was not loaded into the prompt: %s', file.path, outcome.why)
      } else if (outcome.kind === 'text' && outcome.cut) {
        const key = `${file.path}:cut:${outcome.size}`
        if (!reported.has(key)) {
          reported.add(key)
          logger.warn(
            '%s has %d bytes; only the first %d reach the prompt (maxFileBytes %d, maxTotalBytes %d)',
            file.path,
            outcome.size,
            outcome.shown,
            config.maxFileBytes,
            config.maxTotalBytes,
          )
        }
      }
    }
    return renderInstructions(loaded)
  }

  const section = (target: PromptTarget): string | undefined => {
    if (cache.has(target.sessionId)) return cache.get(target.sessionId)
    let text: string | undefined
    try {
      text = build(target.cwd)
    } catch (error) {
      logger.warn('AGENTS.md files for %s could not be loaded: %s', target.cwd, describe(error))
      return undefined
    }
    if (ctx.get('sessions')?.get(target.sessionId)) cache.set(target.sessionId, text)
    return text
  }
  // The files' text is also the key: a session's prompt changes exactly when what they say does.
  ctx.systemPrompt.section(ctx, {
    name: 'context:instructions',
    order: config.order,
    literal: true,
    text: section,
    refresh: section,
    reason: 'instructions changed',
  })

  ctx.on('session/event', (session, event) => {
    if (event.type === 'turn/start') cache.delete(session.id)
  })
  ctx.on('session/closed', async (session) => {
    cache.delete(session.id)
  })
}
