import os from 'node:os'
import path from 'node:path'
import { type Context, Schema, stringList, stringValue } from '@dsh/cordis'
import type {} from '@dsh/hooks'

export interface CodexHooksConfig {
  codexHome: string
  projectFiles: string[]
  files: string[]
  defaultTimeoutSec: number
}

export const Config: Schema<CodexHooksConfig> = Schema.object({
  codexHome: stringValue("Codex's home folder, whose hooks.json always runs; empty: $CODEX_HOME, else ~/.codex."),
  projectFiles: stringList(
    "The project's hooks files, relative to the project folder; they run only once it is trusted.",
    ['.codex/hooks.json'],
  ),
  files: stringList('More hooks.json files whose hooks always run (absolute, or ~/).'),
  defaultTimeoutSec: Schema.number()
    .min(0.001)
    .default(600)
    .description('Seconds a hook command may run when its entry names no timeout (Codex: 600).'),
})

/** The names Codex's hooks know dsh's tools by: the shell is Bash, file changes are apply_patch (alias Edit, Write). */
function codexNames(tool: string): string[] {
  if (tool === 'bash') return ['Bash', tool]
  if (tool === 'write' || tool === 'edit') return ['apply_patch', tool === 'write' ? 'Write' : 'Edit', tool]
  return [tool]
}

export const name = 'hooks-codex'
export const inject = ['hooks']

/** Runs the hooks users keep for Codex (`hooks.json`), through `ctx.hooks`. */
export function apply(ctx: Context, config: CodexHooksConfig) {
  const expand = (file: string) =>
    file === '~' || file.startsWith('~/') ? path.join(os.homedir(), file.slice(1)) : path.resolve(file)
  const codexHome = () => expand(config.codexHome || process.env.CODEX_HOME || '~/.codex')
  ctx.hooks.register(ctx, {
    name: 'codex',
    userFiles: () => [path.join(codexHome(), 'hooks.json'), ...config.files.map(expand)],
    projectFiles: (projectDir) => config.projectFiles.map((file) => path.resolve(projectDir, file)),
    toolNames: codexNames,
    defaultTimeoutSec: config.defaultTimeoutSec,
    environment: () => ({}),
    payloadExtras: ({ session, turn }) => ({
      model: String(session.last('request/header')?.data.model ?? ''),
      ...(turn !== undefined ? { turn_id: `${session.id}:${turn}` } : {}),
    }),
  })
}
