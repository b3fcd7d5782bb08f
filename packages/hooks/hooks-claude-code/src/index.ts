import os from 'node:os'
import path from 'node:path'
import { type Context, Schema, stringList } from '@dsh/cordis'
import type {} from '@dsh/hooks'

export interface ClaudeCodeHooksConfig {
  userFiles: string[]
  projectFiles: string[]
  files: string[]
  defaultTimeoutSec: number
}

export const Config: Schema<ClaudeCodeHooksConfig> = Schema.object({
  userFiles: stringList("The user's Claude Code settings files; their hooks always run. ~/ is the home folder.", [
    '~/.claude/settings.json',
  ]),
  projectFiles: stringList(
    "The project's settings files, relative to the project folder; their hooks run only once it is trusted.",
    ['.claude/settings.json', '.claude/settings.local.json'],
  ),
  files: stringList('More files in the same format whose hooks always run (absolute, or ~/).'),
  defaultTimeoutSec: Schema.number()
    .min(0.001)
    .default(60)
    .description('Seconds a hook command may run when its entry names no timeout (Claude Code: 60).'),
})

/** dsh's tool names as Claude Code calls its own; other tools (MCP's included) keep their names. */
const CLAUDE_NAMES: Record<string, string> = {
  bash: 'Bash',
  read: 'Read',
  write: 'Write',
  edit: 'Edit',
  glob: 'Glob',
  grep: 'Grep',
  ls: 'LS',
  web_fetch: 'WebFetch',
  web_search: 'WebSearch',
  todo_write: 'TodoWrite',
  task: 'Task',
  subagent: 'Task',
  ask_user_question: 'AskUserQuestion',
  exit_plan_mode: 'ExitPlanMode',
  skill: 'Skill',
}

export const name = 'hooks-claude-code'
export const inject = ['hooks']

/** Runs the hooks users keep for Claude Code, from their settings files, through `ctx.hooks`. */
export function apply(ctx: Context, config: ClaudeCodeHooksConfig) {
  const expand = (file: string) =>
    file === '~' || file.startsWith('~/') ? path.join(os.homedir(), file.slice(1)) : path.resolve(file)
  ctx.hooks.register(ctx, {
    name: 'claude-code',
    userFiles: () => [...config.userFiles, ...config.files].map(expand),
    projectFiles: (projectDir) => config.projectFiles.map((file) => path.resolve(projectDir, file)),
    toolNames: (tool) => (CLAUDE_NAMES[tool] ? [CLAUDE_NAMES[tool], tool] : [tool]),
    defaultTimeoutSec: config.defaultTimeoutSec,
    environment: (projectDir) => ({ CLAUDE_PROJECT_DIR: projectDir }),
  })
}
