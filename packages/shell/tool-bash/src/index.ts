import { resolve } from 'node:path'
import { type Context, type JsonValue, Schema } from '@dsh/cordis'
import type { Jobs } from '@dsh/jobs'
import {
  type ProcessExit,
  type ProcessHandle,
  protectedProjectPaths,
  type SandboxMode,
  type SandboxPolicy,
  ShellError,
} from '@dsh/shell'
import {
  defineTool,
  oneLine,
  textArgument,
  type ToolCall,
  ToolError,
  type ToolOutput,
  type ToolRunContext,
  toolParametersBy,
} from '@dsh/tools'
import { z } from 'zod'
import { StreamCapture } from './capture.ts'

export { StreamCapture, TailBuffer } from './capture.ts'

/** What this tool needs from `ctx.permission` (optional): the sandbox policy of a session. */
export interface PermissionPolicySource {
  sandboxPolicy(
    run: { sessionId: string; cwd: string },
    options?: { escalated?: boolean; call?: { call: ToolCall; run: ToolRunContext } },
  ): SandboxPolicy
}

/** What this tool needs from `ctx.spill` (optional): somewhere to keep output too long for the result. */
export interface SpillStore {
  save(input: { sessionId: string; text: string; label: string }): Promise<{ path: string; bytes: number }>
}

export interface BashToolConfig {
  defaultTimeoutMs: number
  maxTimeoutMs: number
  maxOutputBytes: number
  maxSpillBytes: number
  stopAllowanceMs: number
  allowEscalation: boolean
  sandbox: { mode: SandboxMode; network: 'off' | 'on' }
}

export const Config: Schema<BashToolConfig> = Schema.object({
  defaultTimeoutMs: Schema.natural()
    .min(1)
    .default(120_000)
    .description('Timeout of a command when the call gives none, in milliseconds.'),
  maxTimeoutMs: Schema.natural()
    .min(1)
    .default(600_000)
    .description('The longest timeout a call may ask for, in milliseconds.'),
  maxOutputBytes: Schema.natural()
    .min(1)
    .default(30_000)
    .description('Bytes of stdout and of stderr each that the result shows (the tail).'),
  maxSpillBytes: Schema.natural()
    .min(1)
    .default(16 * 1024 * 1024)
    .description('Bytes of stdout and of stderr each that are kept for the spill service when the output is cut.'),
  stopAllowanceMs: Schema.natural()
    .default(30_000)
    .description(
      'How much longer than the longest timeout the tool runtime lets a call take (killing the tree, spilling output), in milliseconds.',
    ),
  allowEscalation: Schema.boolean()
    .default(false)
    .description(
      "Offer the model `escalate` and `justification` parameters to ask the user to run a command outside the sandbox. Off by default: the seeds' bash schema has no such parameters, and a sandbox refusal is final.",
    ),
  sandbox: Schema.object({
    mode: Schema.union(['read-only', 'workspace-write', 'off'] as const)
      .default('workspace-write')
      .description(
        'Confinement when no permission service says otherwise. workspace-write: the workspace and the temp folder are writable, <workspace>/.git is not.',
      ),
    network: Schema.union(['off', 'on'] as const)
      .default('off')
      .description(
        'The network of confined commands: off, or on (outbound, never the host loopback; needs @dsh/sandbox-network).',
      ),
  })
    .default({ mode: 'workspace-write', network: 'off' })
    .description('The sandbox policy used when `ctx.permission` is absent.'),
})

export const name = 'tool-bash'
export const inject = ['tools', 'shell']

/** The parameters `allowEscalation` adds; without it a call can never ask to leave the sandbox. */
const escalation = {
  escalate: z.boolean().optional().describe("Run outside the sandbox. Needs the user's approval and a justification."),
  justification: z
    .string()
    .optional()
    .describe('With escalate: one sentence on why the command must run outside the sandbox.'),
}

/**
 * The call's parameters: the seeds' bash schema, plus `escalation` when the config allows it, with the rule that an
 * escalation carries a justification. One schema object per combination of the config values that shape it.
 */
const bashParameters = toolParametersBy((maxTimeoutMs: number, defaultTimeoutMs: number, allowEscalation: boolean) => {
  const seed = {
    command: z.string().min(1).describe('The command to run.'),
    description: z.string().describe('What the command does, in 5 to 10 words, shown to the user.'),
    timeoutMs: z
      .number()
      .int()
      .min(1)
      .max(maxTimeoutMs, `timeoutMs may be at most ${maxTimeoutMs} milliseconds`)
      .optional()
      .describe(`Timeout in milliseconds. Default ${defaultTimeoutMs}, at most ${maxTimeoutMs}.`),
    workdir: z
      .string()
      .min(1)
      .optional()
      .describe('The folder to run in, absolute or relative to the workspace. Default: the workspace.'),
    run_in_background: z
      .boolean()
      .optional()
      .describe('Start the command as a background job and return its id at once.'),
  }
  const full = z.object({ ...seed, ...escalation })
  // Without escalation the two parameters do not exist, so `args.escalate` is always undefined.
  const parameters = allowEscalation ? full : (z.object(seed) as unknown as typeof full)
  return parameters.superRefine((args, issues) => {
    if (args.escalate && !args.justification?.trim()) {
      issues.addIssue({
        code: 'custom',
        path: ['justification'],
        message: 'escalate needs a justification: say in one sentence why the command must run outside the sandbox',
      })
    }
  })
})
const defaults = Config()
bashParameters(defaults.maxTimeoutMs, defaults.defaultTimeoutMs, defaults.allowEscalation)

/** Registers `bash` on `ctx.tools`, running through `ctx.shell`. Disposal stops the commands still running. */
export function apply(ctx: Context, config: BashToolConfig) {
  const running = new Set<ProcessHandle>()
  ctx.effect(
    () => async () => {
      const handles = [...running]
      await Promise.allSettled(handles.map((handle) => handle.kill()))
      await Promise.allSettled(handles.map((handle) => handle.done))
    },
    'bash: stop running commands',
  )

  const permission = () => ctx.get('permission' as string) as PermissionPolicySource | undefined
  const spillStore = () => ctx.get('spill' as string) as SpillStore | undefined
  const jobs = (): Jobs | undefined => ctx.get('jobs')

  function policyFor(run: ToolRunContext, escalated: boolean, args: unknown): SandboxPolicy {
    const source = permission()
    if (source) {
      // The call goes along so that the network proxy can ask the user about it.
      const call = { callId: run.callId, name: run.toolName, arguments: JSON.stringify(args) }
      try {
        return source.sandboxPolicy({ sessionId: run.sessionId, cwd: run.cwd }, { escalated, call: { call, run } })
      } catch (error) {
        throw new ToolError(
          'BASH_POLICY_FAILED',
          `could not work out the sandbox policy for this session: ${message(error)}`,
        )
      }
    }
    if (escalated && config.sandbox.mode !== 'off') {
      throw new ToolError(
        'BASH_ESCALATION_UNAVAILABLE',
        'running outside the sandbox needs approval, and no permission service is running to ask for it, so the command was not run. Run it inside the sandbox, or tell the user.',
      )
    }
    // Without a permission service: the workspace only (the sandbox's /tmp is private), its protected paths read-only.
    return {
      mode: config.sandbox.mode,
      network: config.sandbox.network,
      writableRoots: [run.cwd],
      protectedPaths: protectedProjectPaths(run.cwd),
    }
  }

  async function start(
    args: { command: string; workdir?: string | undefined },
    run: ToolRunContext,
    policy: SandboxPolicy,
    timeoutMs?: number,
    signal?: AbortSignal,
  ) {
    try {
      return await ctx.shell.run({
        command: args.command,
        cwd: args.workdir === undefined ? run.cwd : resolve(run.cwd, args.workdir),
        policy,
        ...(timeoutMs !== undefined ? { timeoutMs } : {}),
        ...(signal ? { signal } : {}),
      })
    } catch (error) {
      if (error instanceof ShellError) {
        throw new ToolError(error.code === 'BAD_CWD' ? 'BASH_BAD_CWD' : 'BASH_SANDBOX_REFUSED', error.message)
      }
      throw new ToolError('BASH_SPAWN_FAILED', `could not start the command: ${message(error)}`)
    }
  }

  ctx.tools.register(
    ctx,
    defineTool({
      name: 'bash',
      presentation: {
        kind: 'execute',
        view: 'terminal',
        title: (args) => {
          const command = textArgument(args, 'command')
          return command ? `\`${oneLine(command)}\`` : 'Run a command'
        },
        command: (args) => textArgument(args, 'command'),
        locations: () => [],
      },
      description:
        'Run a command with `bash -c`. Each call is a fresh, non-interactive shell (no state carries over, empty stdin): ' +
        'pass workdir instead of cd. Returns stdout and stderr, each cut to its last ' +
        `${config.maxOutputBytes} bytes (the full output is then saved to a file to page with read), and the exit code: ` +
        `check it. Timeout ${config.defaultTimeoutMs}ms by default, at most ${config.maxTimeoutMs}ms; it kills every process ` +
        'the command started.\n' +
        'Commands usually run in a sandbox: only the workspace and $TMPDIR are writable, .git and project config ' +
        '(.dsh, .claude, .codex, .agents, .mcp.json) are read-only, and the network is off or HTTP(S) through a proxy that ' +
        'allows package registries and asks about other hosts. Processes a command starts end with it. ' +
        (config.allowEscalation
          ? 'If a command fails only because of that and must run anyway, call bash again with escalate: true ' +
            'and a one-sentence justification; the user is asked to approve it.\n'
          : 'A write the sandbox denied is a policy decision, not a bug in the command: do not retry it another way.\n') +
        'For servers, watchers and other long-running commands use run_in_background: true; it returns a job id at once. ' +
        'Read its output with job_output and stop it with job_kill.',
      parameters: bashParameters(config.maxTimeoutMs, config.defaultTimeoutMs, config.allowEscalation),
      timeoutMs: config.maxTimeoutMs + config.stopAllowanceMs,
      access: (args) =>
        args.escalate
          ? { kind: 'execute', escalated: true, summary: args.command, command: args.command }
          : { kind: 'execute', summary: args.command, command: args.command },
      async execute(args, run): Promise<ToolOutput> {
        const escalated = args.escalate === true
        const policy = policyFor(run, escalated, args)

        if (args.run_in_background) {
          const service = jobs()
          if (!service)
            throw new ToolError(
              'BASH_JOBS_UNAVAILABLE',
              'background jobs are not available here (no jobs service is running); run the command in the foreground.',
            )
          const handle = await start(args, run, policy)
          const label = (args.description?.trim() || args.command).slice(0, 200)
          let id: string
          try {
            id = service.start({ label, handle, sessionId: run.sessionId })
          } catch (error) {
            throw new ToolError('BASH_JOB_REFUSED', `the background job was not started: ${message(error)}`)
          }
          return {
            content:
              `started background job ${id}: ${label}\n` +
              `Read its output with job_output {"job_id": "${id}"} (add wait: true to wait for its end); stop it with job_kill. ` +
              'Do not poll in a tight loop.',
            meta: { jobId: id, sandbox: policy.mode },
          }
        }

        const timeoutMs = args.timeoutMs ?? config.defaultTimeoutMs
        const keepFull = spillStore() !== undefined
        const stdout = new StreamCapture(config.maxOutputBytes, keepFull ? config.maxSpillBytes : 0)
        const stderr = new StreamCapture(config.maxOutputBytes, keepFull ? config.maxSpillBytes : 0)
        const handle = await start(args, run, policy, timeoutMs, run.signal)
        running.add(handle)
        handle.stdout.on('data', (chunk: Buffer) => stdout.push(chunk))
        handle.stderr.on('data', (chunk: Buffer) => stderr.push(chunk))
        let exit: ProcessExit
        try {
          exit = await handle.done
        } catch (error) {
          throw new ToolError('BASH_SPAWN_FAILED', `could not start the command: ${message(error)}`)
        } finally {
          running.delete(handle)
        }
        const spilled = {
          stdout: await spill(stdout, 'stdout', run),
          stderr: await spill(stderr, 'stderr', run),
        }
        return render({
          exit,
          stdout,
          stderr,
          spilled,
          timeoutMs,
          policy,
          canEscalate: config.allowEscalation && !escalated && permission() !== undefined,
        })
      },
    }),
  )

  /** Saves a cut stream in full through `ctx.spill`; the path, or a note on why there is none. */
  async function spill(
    capture: StreamCapture,
    stream: 'stdout' | 'stderr',
    run: ToolRunContext,
  ): Promise<SpillNote | undefined> {
    if (capture.tail.read().dropped === 0) return undefined
    const store = spillStore()
    if (!store) return undefined
    try {
      const saved = await store.save({ sessionId: run.sessionId, text: capture.full(), label: `bash-${stream}` })
      return { path: saved.path }
    } catch (error) {
      ctx.logger('tool-bash').warn('saving the full %s of a command failed: %s', stream, message(error))
      return { failed: message(error) }
    }
  }
}

type SpillNote = { path: string } | { failed: string }

interface Outcome {
  exit: ProcessExit
  stdout: StreamCapture
  stderr: StreamCapture
  spilled: { stdout: SpillNote | undefined; stderr: SpillNote | undefined }
  timeoutMs: number
  policy: SandboxPolicy
  canEscalate: boolean
}

function render({ exit, stdout: out, stderr: err, spilled, timeoutMs, policy, canEscalate }: Outcome): ToolOutput {
  const stdout = out.tail.read()
  const stderr = err.tail.read()
  const lines: string[] = []
  const cut = (stream: string, dropped: number, note: SpillNote | undefined) => {
    let line = `[${stream} truncated: the first ${dropped} bytes were dropped`
    if (note && 'path' in note) line += `; the full ${stream} is saved at ${note.path} (page through it with read)`
    else if (note) line += `; saving the full ${stream} failed: ${note.failed}`
    return `${line}]`
  }
  if (stdout.dropped > 0) lines.push(cut('stdout', stdout.dropped, spilled.stdout))
  if (stdout.text) lines.push(stdout.text.replace(/\n$/, ''))
  if (stderr.text || stderr.dropped > 0) {
    lines.push('[stderr]')
    if (stderr.dropped > 0) lines.push(cut('stderr', stderr.dropped, spilled.stderr))
    if (stderr.text) lines.push(stderr.text.replace(/\n$/, ''))
  }
  if (!stdout.text && !stderr.text && stdout.dropped === 0 && stderr.dropped === 0) lines.push('(no output)')
  const denied = policy.mode !== 'off' && exit.code !== 0 && /Read-only file system/.test(stderr.text)
  if (denied) {
    lines.push(
      `[sandbox: a write was denied under the ${policy.mode} sandbox` +
        (canEscalate
          ? '; if the command must write there, call bash again with escalate: true and a justification]'
          : '; this is a policy decision: do not retry the write another way]'),
    )
  }
  if (exit.timedOut) lines.push(`[timed out after ${timeoutMs}ms; the command and its child processes were killed]`)
  if (exit.cancelled) lines.push('[cancelled; the command and its child processes were killed]')
  if (exit.signal) lines.push(`[killed by signal: ${exit.signal}]`)
  if (exit.code !== null) lines.push(`[exit code: ${exit.code}]`)
  if (exit.lingering) {
    lines.push(
      '[background processes started by this command are still running; they are stopped when dsh shuts down. Use run_in_background for long-running commands]',
    )
  }
  const meta: Record<string, JsonValue> = {
    exitCode: exit.code,
    signal: exit.signal,
    timedOut: exit.timedOut,
    sandbox: policy.mode,
    stdoutDroppedBytes: stdout.dropped,
    stderrDroppedBytes: stderr.dropped,
  }
  if (spilled.stdout && 'path' in spilled.stdout) meta.stdoutPath = spilled.stdout.path
  if (spilled.stderr && 'path' in spilled.stderr) meta.stderrPath = spilled.stderr.path
  return {
    content: lines.join('\n'),
    isError: exit.timedOut || exit.cancelled,
    ...(exit.timedOut ? { code: 'BASH_TIMEOUT' } : exit.cancelled ? { code: 'BASH_CANCELLED' } : {}),
    meta,
  }
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
