import { stat } from 'node:fs/promises'
import { type Context, Schema } from '@dsh/cordis'
import { defineTool, ToolError, type ToolOutput } from '@dsh/tools'
import { z } from 'zod'
import { groupAlive, killGroup, type RunOutcome, runCommand, scrubEnv } from './process.ts'

export { SENSITIVE_ENV_NAME, scrubEnv, TailBuffer } from './process.ts'

export interface BashToolConfig {
  shell: string
  defaultTimeoutMs: number
  maxTimeoutMs: number
  maxOutputBytes: number
  killGraceMs: number
  env: Record<string, string>
}

export const Config: Schema<BashToolConfig> = Schema.object({
  shell: Schema.string().default('bash').description('The shell that runs each command as `<shell> -c <command>`.'),
  defaultTimeoutMs: Schema.natural().min(1).default(120_000).description('Timeout of a command when the call gives none, in milliseconds.'),
  maxTimeoutMs: Schema.natural().min(1).default(600_000).description('The longest timeout a call may ask for, in milliseconds.'),
  maxOutputBytes: Schema.natural().min(1).default(30_000).description('Bytes kept of stdout and of stderr each (the tail).'),
  killGraceMs: Schema.natural().default(2_000).description('After SIGTERM, how long the process group has before SIGKILL; also how long pipes are drained after the shell exits.'),
  env: Schema.dict(Schema.string())
    .default({ NO_COLOR: '1', TERM: 'dumb', PAGER: 'cat', GIT_PAGER: 'cat' })
    .description('Variables set for every command, on top of the scrubbed environment.'),
})

export const name = 'tool-bash'
export const inject = ['tools']

/** Registers `bash` on `ctx.tools`. Disposal stops running commands and the background processes they left. */
export function apply(ctx: Context, config: BashToolConfig) {
  const running = new Set<{ abort: AbortController; done: Promise<unknown> }>()
  const lingering = new Set<number>()
  ctx.effect(
    () => async () => {
      for (const run of running) run.abort.abort(new Error('the tool-bash plugin was disposed'))
      await Promise.allSettled([...running].map((run) => run.done))
      await Promise.allSettled([...lingering].map((pgid) => killGroup(pgid, config.killGraceMs)))
      lingering.clear()
    },
    'bash processes',
  )
  ctx.tools.register(
    ctx,
    defineTool({
      name: 'bash',
      description:
        `Run a command with \`bash -c\` in the workspace and return its output. Each call is a fresh, non-interactive shell ` +
        `(no state carries over; stdin is empty). stdout and stderr come back as separate sections, each cut to its last ` +
        `${config.maxOutputBytes} bytes, followed by the exit code. Default timeout ${config.defaultTimeoutMs}ms, at most ` +
        `${config.maxTimeoutMs}ms; on timeout every process the command started is killed. Check the exit code.`,
      parameters: z.object({
        command: z.string().min(1).describe('The command to run.'),
        timeout: z.number().int().min(1).max(config.maxTimeoutMs).optional().describe(`Timeout in milliseconds. Default ${config.defaultTimeoutMs}.`),
        description: z.string().optional().describe('A few words on what the command does, for the user.'),
      }),
      // Longer than any timeout a call may ask for, plus the kill and drain time, so the runtime never races it.
      timeoutMs: config.maxTimeoutMs + 3 * config.killGraceMs + 10_000,
      async execute(args, run): Promise<ToolOutput> {
        const cwd = await stat(run.cwd).catch(() => undefined)
        if (!cwd?.isDirectory()) throw new ToolError('BASH_BAD_CWD', `the working directory ${run.cwd} does not exist or is not a directory.`)
        const timeoutMs = args.timeout ?? config.defaultTimeoutMs
        const abort = new AbortController()
        const forward = () => abort.abort(run.signal.reason)
        if (run.signal.aborted) forward()
        else run.signal.addEventListener('abort', forward, { once: true })
        const done = runCommand({
          shell: config.shell,
          command: args.command,
          cwd: run.cwd,
          env: { ...scrubEnv(process.env), ...config.env },
          timeoutMs,
          signal: abort.signal,
          maxOutputBytes: config.maxOutputBytes,
          graceMs: config.killGraceMs,
        })
        const entry = { abort, done }
        running.add(entry)
        let outcome: RunOutcome
        try {
          outcome = await done
        } catch (error) {
          throw new ToolError('BASH_SPAWN_FAILED', `could not start ${config.shell}: ${error instanceof Error ? error.message : String(error)}`)
        } finally {
          running.delete(entry)
          run.signal.removeEventListener('abort', forward)
        }
        if (outcome.lingeringGroup !== undefined) {
          lingering.add(outcome.lingeringGroup)
          for (const pgid of lingering) if (!(await groupAlive(pgid))) lingering.delete(pgid)
        }
        return render(outcome, timeoutMs)
      },
    }),
  )
}

function render(outcome: RunOutcome, timeoutMs: number): ToolOutput {
  const lines: string[] = []
  const { stdout, stderr } = outcome
  if (stdout.dropped > 0) lines.push(`[stdout truncated: the first ${stdout.dropped} bytes were dropped]`)
  if (stdout.text) lines.push(stdout.text.replace(/\n$/, ''))
  if (stderr.text || stderr.dropped > 0) {
    lines.push('[stderr]')
    if (stderr.dropped > 0) lines.push(`[stderr truncated: the first ${stderr.dropped} bytes were dropped]`)
    if (stderr.text) lines.push(stderr.text.replace(/\n$/, ''))
  }
  if (!stdout.text && !stderr.text && stdout.dropped === 0 && stderr.dropped === 0) lines.push('(no output)')
  if (outcome.timedOut) lines.push(`[timed out after ${timeoutMs}ms; the command and its child processes were killed]`)
  if (outcome.aborted) lines.push('[cancelled; the command and its child processes were killed]')
  if (outcome.signal) lines.push(`[killed by signal: ${outcome.signal}]`)
  if (outcome.exitCode !== null) lines.push(`[exit code: ${outcome.exitCode}]`)
  if (outcome.lingeringGroup !== undefined) lines.push('[background processes started by this command are still running]')
  return {
    content: lines.join('\n'),
    isError: outcome.timedOut || outcome.aborted,
    ...(outcome.timedOut ? { code: 'BASH_TIMEOUT' } : outcome.aborted ? { code: 'BASH_CANCELLED' } : {}),
    meta: {
      exitCode: outcome.exitCode,
      signal: outcome.signal,
      timedOut: outcome.timedOut,
      stdoutDroppedBytes: stdout.dropped,
      stderrDroppedBytes: stderr.dropped,
    },
  }
}
