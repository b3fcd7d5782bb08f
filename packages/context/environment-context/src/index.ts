import os from 'node:os'
import { type Context, Schema } from '@dsh/cordis'
import type { SectionTarget } from '@dsh/system-prompt'
import { type GitSummary, gitSummary } from './git.ts'

export { gitSummary, type GitSummary, type GitOptions } from './git.ts'

export interface EnvironmentContextConfig {
  order: number
  shell: string
  git: boolean
  gitTimeoutMs: number
  maxStatusEntries: number
}

export const Config: Schema<EnvironmentContextConfig> = Schema.object({
  order: Schema.number()
    .default(150)
    .description(
      'Where the section goes in the system prompt: after the text every session shares, before the instructions.',
    ),
  shell: Schema.string().default('bash').description('The shell named in the section: the one the `bash` tool runs.'),
  git: Schema.boolean()
    .default(true)
    .description('Add the git branch and a short status when the workspace is in a repository.'),
  gitTimeoutMs: Schema.natural()
    .min(1)
    .default(2000)
    .description(
      'Each git call that reads the branch and status is killed after this long; the section then leaves git out.',
    ),
  maxStatusEntries: Schema.natural()
    .default(10)
    .description('At most this many changed paths are listed; the rest are counted.'),
})

export const name = 'environment-context'
export const inject = ['systemPrompt']

/**
 * The `environment` system-prompt section: workspace, platform, shell, date
 * and time zone, model, and the git branch with a short status. Rendered once
 * per session (again only on a new day), so it describes the workspace as the
 * session found it.
 */
export function apply(ctx: Context, config: EnvironmentContextConfig) {
  ctx.systemPrompt.section(ctx, {
    name: 'context:environment',
    order: config.order,
    literal: true,
    text: async (target) => {
      const git = config.git
        ? await gitSummary(target.cwd, { timeoutMs: config.gitTimeoutMs, maxEntries: config.maxStatusEntries })
        : undefined
      return renderEnvironment(target, config, git)
    },
  })
}

export function renderEnvironment(
  target: SectionTarget,
  config: Pick<EnvironmentContextConfig, 'shell' | 'git'>,
  git: GitSummary | undefined,
): string {
  const lines = [
    '# Environment',
    `- Workspace: ${target.cwd} (relative paths resolve against it)`,
    `- Platform: ${os.type()} ${os.release()} (${os.arch()}); shell: ${config.shell}`,
    `- Date: ${target.date} (time zone ${target.timeZone})`,
    `- Model: ${target.model} (${target.provider})`,
  ]
  if (git) {
    lines.push(`- Git branch: ${git.branch}`)
    if (git.total === 0) lines.push('- Git status: clean')
    else {
      const more = git.total > git.entries.length ? `\n  - … and ${git.total - git.entries.length} more` : ''
      // Paths are JSON strings: a file name is data, and a newline in one must not start a line of the prompt.
      const listed = git.entries.map((entry) => `  - ${entry.slice(0, 2)} ${JSON.stringify(entry.slice(3, 300))}`)
      lines.push(
        `- Git status when the session started: ${git.total} changed or untracked\n${listed.join('\n')}${more}`,
      )
    }
  } else if (config.git) lines.push('- Git: not a repository (or git is unavailable)')
  return lines.join('\n')
}
