import { parseCmdline } from '@dsh/cmdline'
import type { Context } from '@dsh/cordis'
import { parseRule } from '@dsh/permission-rules'
import { NETWORK_MODES, type NetworkMode } from '@dsh/sandbox'
import { Command } from 'commander'

declare module '@dsh/cordis' {
  interface Context {
    headlessStartup: HeadlessStartup
  }
}

export interface HeadlessStartup {
  /** The task's words, joined with spaces (without a `-`). */
  task: string
  /** A `-` among the words: the runner reads standard input and adds it to the task. */
  stdin: boolean
  /** Print one JSON object per line (events, deltas, result) instead of the plain answer. */
  json: boolean
  /** Stream the model's reasoning to stderr. */
  reasoning: boolean
  /** Say on stderr what each tool call does as it starts, and which calls fail. */
  verbose: boolean
  resume?: string
  /** Continue the most recent stored session started in the current directory. */
  continue: boolean
  /** Run the task in plan mode: only read-only tools run, and the answer is the plan. */
  plan: boolean
  model?: string
  /** The model route (`deepseek`, `anthropic`, `openai`, `google`, `openrouter`, `openai-compatible`, ...). */
  provider?: string
  /** The endpoint of that route; alone it means an OpenAI-compatible server. */
  baseURL?: string
  /** Permission preset for this run; the permission row's default when absent. */
  permission?: 'read-only' | 'workspace-write' | 'danger-full-access'
  /** What happens to a call outside the preset: `ask` (denied here, since headless cannot ask) or `never`. */
  approval?: 'ask' | 'never'
  /** Model calls the task may make before it ends with an error; the agent loop's limit when absent. */
  maxSteps?: number
  /** The network of sandboxed commands for this run; the permission row's per-preset default when absent. */
  network?: NetworkMode
  /** Trust the current directory for this run: its project MCP servers and hooks may run. */
  trustWorkspace: boolean
  /** MCP files (`{ "mcpServers": ... }`) whose servers start for this run, as given on the command line. */
  mcpConfig: string[]
  /** Permission rules for calls that run without asking (`--allow`, repeatable), as given. */
  allow: string[]
  /** Permission rules for calls that never run (`--deny`, repeatable), as given. */
  deny: string[]
}

const PRESETS = ['read-only', 'workspace-write', 'danger-full-access'] as const
const APPROVALS = ['ask', 'never'] as const

export const name = 'headless-startup'
export const inject = ['cmdlineArgs', 'appExit']

/** Parses `dsh --profile headless [options] <task...>` and provides `headlessStartup`. */
export function apply(ctx: Context) {
  const program = new Command('dsh --profile headless')
    .description('Run one task in the current directory, print the answer and exit (0 when the task completed).')
    .argument('[task...]', 'the task; several words are joined with spaces, and - adds standard input after them')
    .option('--json', 'print JSON lines: every session event, live deltas, and a final result object')
    .option('--reasoning', "show the model's reasoning on stderr as it streams")
    .option('-v, --verbose', 'show on stderr what each tool call does as it starts, and the calls that fail')
    .option('--resume <sessionId>', 'continue a stored session with this task')
    .option('-c, --continue', 'continue the most recent stored session started in this directory')
    .option('--model <id>', 'the model to use (default from the agent config, e.g. deepseek-v4-flash)')
    .option(
      '--provider <route>',
      'the model route: deepseek, anthropic, openai, google, openrouter or openai-compatible (default deepseek)',
    )
    .option('--base-url <url>', "the route's endpoint; without --provider, an OpenAI-compatible server at that URL")
    .option(
      '--permission <preset>',
      `what tools may do without asking: ${PRESETS.join(', ')} (default workspace-write)`,
    )
    .option(
      '--approval <policy>',
      `calls outside the preset: ask (denied in headless, which cannot ask) or never (default ask)`,
    )
    .option(
      '--network <mode>',
      `network of sandboxed commands: ${NETWORK_MODES.join(', ')} (default proxy under workspace-write: allowed registries only)`,
    )
    .option('--max-steps <n>', 'model calls the task may make before it stops with an error (default 200)')
    .option(
      '--trust-workspace',
      'trust the current directory for this run: its .mcp.json servers and project hooks may run (headless cannot ask)',
    )
    .option(
      '--mcp-config <file>',
      'start the MCP servers of this file ({"mcpServers": ...}); repeatable',
      (file: string, files: string[]) => [...files, file],
      [] as string[],
    )
    .option('--plan', 'plan mode: only read-only tools run, nothing is changed, and the answer is the plan')
    .option(
      '--allow <rule>',
      'run matching calls without asking where the preset would ask, e.g. "mcp__github__*", ' +
        '"web_fetch(domain:docs.python.org)" (never widens the sandbox); repeatable',
      (rule: string, rules: string[]) => [...rules, rule],
      [] as string[],
    )
    .option(
      '--deny <rule>',
      'never run matching calls, e.g. "bash(curl *)", "write(secrets/**)"; wins over --allow; repeatable',
      (rule: string, rules: string[]) => [...rules, rule],
      [] as string[],
    )
  /** The choice a flag's value names, or a usage error that lists the choices. */
  const oneOf = <T extends string>(flag: string, choices: readonly T[], given: unknown): T => {
    const found = choices.find((choice) => choice === given)
    return found ?? program.error(`error: --${flag} must be one of ${choices.join(', ')}, got "${String(given)}"`)
  }
  const startup = parseCmdline(ctx, program, ({ args, options }): HeadlessStartup => {
    const stdin = args.includes('-')
    const task = args
      .filter((word) => word !== '-')
      .join(' ')
      .trim()
    if (!task && !stdin)
      program.error(
        'error: a task is required, for example: dsh --profile headless "run the tests" (or - to read it from standard input)',
      )
    const value: HeadlessStartup = {
      task,
      stdin,
      json: options.json === true,
      reasoning: options.reasoning === true,
      verbose: options.verbose === true,
      continue: options.continue === true,
      trustWorkspace: options.trustWorkspace === true,
      mcpConfig: Array.isArray(options.mcpConfig) ? options.mcpConfig.map(String) : [],
      plan: options.plan === true,
      allow: Array.isArray(options.allow) ? options.allow.map(String) : [],
      deny: Array.isArray(options.deny) ? options.deny.map(String) : [],
    }
    for (const flag of ['allow', 'deny'] as const) {
      for (const rule of value[flag]) {
        try {
          parseRule(rule)
        } catch (error) {
          program.error(`error: --${flag}: ${(error as Error).message}`)
        }
      }
    }
    if (value.continue && options.resume !== undefined)
      program.error('error: --continue and --resume cannot be used together')
    if (typeof options.resume === 'string') {
      if (!/^[A-Za-z0-9._-]+$/.test(options.resume))
        program.error(`error: --resume needs a session id, got "${options.resume}"`)
      value.resume = options.resume
    }
    if (typeof options.model === 'string') value.model = options.model
    if (typeof options.baseUrl === 'string') {
      let url: URL | undefined
      try {
        url = new URL(options.baseUrl)
      } catch {
        // reported below
      }
      if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:'))
        program.error(`error: --base-url needs an http(s) URL, got "${options.baseUrl}"`)
      value.baseURL = options.baseUrl
    }
    if (typeof options.provider === 'string') {
      if (!/^[a-z0-9][a-z0-9._-]*$/i.test(options.provider))
        program.error(`error: --provider needs a route name such as anthropic, got "${options.provider}"`)
      value.provider = options.provider
    } else if (value.baseURL) value.provider = 'openai-compatible'
    if (options.permission !== undefined) value.permission = oneOf('permission', PRESETS, options.permission)
    if (options.approval !== undefined) {
      const approval = APPROVALS.find((a) => a === options.approval)
      if (!approval) program.error(`error: --approval must be ask or never, got "${String(options.approval)}"`)
      value.approval = approval
    }
    if (options.network !== undefined) value.network = oneOf('network', NETWORK_MODES, options.network)
    if (options.maxSteps !== undefined) {
      const text = String(options.maxSteps)
      if (!/^[1-9]\d{0,5}$/.test(text))
        program.error(`error: --max-steps needs a whole number from 1 to 999999, got "${text}"`)
      value.maxSteps = Number(text)
    }
    return value
  })
  if (startup) ctx.provide('headlessStartup', startup)
}
