import { setTimeout as sleep } from 'node:timers/promises'
import type {} from '@dsh/agent'
import { assertNever, type Context, Schema, sharedMap } from '@dsh/cordis'
import { textMessage } from '@dsh/session'
import { defineTool, textArgument, ToolError, type ToolRunContext, toolParameters, toolParametersBy } from '@dsh/tools'
import { z } from 'zod'
import { leadingContinuation } from './ring.ts'
import { type JobInfo, JobNotFoundError, type JobOutput, type JobStatus } from './seam.ts'

export interface JobToolsConfig {
  defaultWaitMs: number
  maxWaitMs: number
  maxReadBytes: number
  timeoutAllowanceMs: number
  notifyOnEnd: boolean
}

export const Config: Schema<JobToolsConfig> = Schema.object({
  defaultWaitMs: Schema.natural()
    .min(1)
    .default(30_000)
    .description('How long a `job_output` call with `wait: true` and no `timeout_ms` waits, in milliseconds.'),
  maxWaitMs: Schema.natural()
    .min(1)
    .default(600_000)
    .description('The longest `timeout_ms` a `job_output` call may ask for, in milliseconds.'),
  maxReadBytes: Schema.natural()
    .min(1)
    .default(30_000)
    .description(
      'The most new output one `job_output` call returns: the newest part, with a note saying how much was skipped.',
    ),
  timeoutAllowanceMs: Schema.natural()
    .default(30_000)
    .description(
      'How much longer than its wait a `job_output` call, and a `job_kill` call, may take before the tool runtime times it out, in milliseconds.',
    ),
  notifyOnEnd: Schema.boolean()
    .default(true)
    .description(
      "Tell the owning session's model when one of its jobs ends (a notice it reads at its next step), unless it stopped the job itself.",
    ),
})

export const name = 'tool-jobs'
export const inject = ['tools', 'jobs']

const CURSORS = 'jobs:read-offsets'

/** job_output's parameters for the longest wait a call may ask for and the default one. */
const jobOutputParameters = toolParametersBy((maxWaitMs: number, defaultWaitMs: number) =>
  z.object({
    job_id: z.string().min(1).describe('The id the job was started with, e.g. job-1.'),
    wait: z
      .boolean()
      .optional()
      .describe('Wait for the job to end (or the timeout) before answering. Default false: answer at once.'),
    timeout_ms: z
      .number()
      .int()
      .min(1)
      .max(maxWaitMs)
      .optional()
      .describe(`With wait: the longest wait in milliseconds. Default ${defaultWaitMs}.`),
  }),
)
const defaults = Config()
jobOutputParameters(defaults.maxWaitMs, defaults.defaultWaitMs)

const jobListParameters = toolParameters(z.object({}))

const jobKillParameters = toolParameters(
  z.object({
    job_id: z.string().min(1).describe('The id of the job to stop.'),
    reason: z.string().optional().describe('Why you stop it, in a few words; kept in the session log.'),
  }),
)

/** Registers `job_output`, `job_list` and `job_kill`: the model's view of its own session's background jobs. */
export function apply(ctx: Context, config: JobToolsConfig) {
  const jobs = ctx.jobs
  // Jobs the model stopped with job_kill: it knows they ended, so they get no notice.
  const stoppedByModel = new Set<string>()
  if (config.notifyOnEnd)
    ctx.on('jobs/finished', (job) => {
      if (stoppedByModel.delete(job.id)) return
      const text =
        `[Background job ${job.id} (${job.label}) ended: ${statusText(job.status)}. ` +
        'job_output reads what it printed.]'
      // An idle session reads it with its next turn; a closed one (its jobs are killed with it) gets nothing.
      ctx
        .get('agents')
        ?.get(job.sessionId)
        ?.inject(textMessage('user', text, { kind: 'plugin', plugin: 'tool-jobs', form: 'notice' }))
    })

  ctx.tools.register(
    ctx,
    defineTool({
      name: 'job_output',
      presentation: {
        kind: 'read',
        view: 'terminal',
        title: (args) => `Output of ${textArgument(args, 'job_id') ?? 'a background job'}`,
      },
      description:
        'Read the new output of a background job (stdout and stderr as they arrived) since the last job_output call for it, ' +
        'and its status, as a closing [status: ...] line. It answers at once unless wait is true: then it waits for the job ' +
        `to end, at most timeout_ms (default ${config.defaultWaitMs}). Do not poll in a tight loop; prefer one call with wait. ` +
        `At most the newest ${config.maxReadBytes} bytes are returned per call.`,
      parameters: jobOutputParameters(config.maxWaitMs, config.defaultWaitMs),
      readOnly: true,
      timeoutMs: config.maxWaitMs + config.timeoutAllowanceMs,
      access: (args) => ({ kind: 'read', summary: `output of background job ${args.job_id}` }),
      async execute(args, run) {
        const owner = { sessionId: run.sessionId }
        const cursors = cursorsOf(run)
        const since = cursors.get(args.job_id) ?? 0
        const output = await notFoundAsToolError(args.job_id, () =>
          args.wait
            ? waitForEnd(args.job_id, owner, args.timeout_ms ?? config.defaultWaitMs, run.signal).then(() =>
                jobs.output(args.job_id, { ...owner, since }),
              )
            : jobs.output(args.job_id, { ...owner, since }),
        )
        cursors.set(args.job_id, output.offset)
        return {
          content: renderOutput(output, config.maxReadBytes),
          meta: { status: output.status, offset: output.offset },
        }
      },
    }),
  )

  ctx.tools.register(
    ctx,
    defineTool({
      name: 'job_list',
      presentation: { kind: 'read', view: 'generic', title: () => 'List background jobs' },
      description: "List this session's background jobs with their status.",
      parameters: jobListParameters,
      readOnly: true,
      isConcurrencySafe: () => true,
      access: () => ({ kind: 'read', summary: 'list background jobs' }),
      execute(_args, run) {
        const list = jobs.list(run.sessionId)
        if (list.length === 0) return { content: '(no background jobs)' }
        return { content: list.map((job) => `${job.id} [${statusText(job.status)}] ${job.label}`).join('\n') }
      },
    }),
  )

  ctx.tools.register(
    ctx,
    defineTool({
      name: 'job_kill',
      presentation: {
        kind: 'execute',
        view: 'generic',
        title: (args) => `Stop ${textArgument(args, 'job_id') ?? 'a background job'}`,
      },
      description:
        'Stop a background job and every process it started. Its output so far stays readable with job_output.',
      parameters: jobKillParameters,
      timeoutMs: config.timeoutAllowanceMs,
      access: (args) => ({ kind: 'other', summary: `stop background job ${args.job_id}` }),
      async execute(args, run) {
        const owner = { sessionId: run.sessionId }
        const before = jobs.get(args.job_id, owner)
        if (!before) throw notFound(args.job_id)
        if (before.status.state !== 'running') {
          await jobs.kill(args.job_id, owner) // stops any background processes it left behind
          return { content: `job ${args.job_id} had already ended [status: ${statusText(before.status)}]` }
        }
        stoppedByModel.add(args.job_id)
        const after: JobInfo = await notFoundAsToolError(args.job_id, () => jobs.kill(args.job_id, owner))
        return {
          content: `stopped job ${args.job_id} (${after.label})${args.reason ? ` because: ${args.reason}` : ''} [status: ${statusText(after.status)}]`,
          meta: { status: after.status },
        }
      },
    }),
  )

  /** Resolves when the job has ended, the time is up or the call is cancelled, whichever comes first. */
  async function waitForEnd(id: string, owner: { sessionId: string }, timeoutMs: number, signal: AbortSignal) {
    const stop = new AbortController()
    const quit = AbortSignal.any([stop.signal, signal])
    try {
      await Promise.race([jobs.completion(id, owner), sleep(timeoutMs, undefined, { signal: quit }).catch(() => {})])
    } finally {
      stop.abort()
    }
  }
}

function cursorsOf(run: ToolRunContext): Map<string, number> {
  return sharedMap(run.sessionState, CURSORS)
}

async function notFoundAsToolError<T>(id: string, read: () => T | Promise<T>): Promise<T> {
  try {
    return await read()
  } catch (error) {
    throw error instanceof JobNotFoundError ? notFound(id) : error
  }
}

function notFound(id: string): ToolError {
  return new ToolError(
    'JOB_NOT_FOUND',
    `there is no background job ${id} in this session; job_list shows the jobs there are.`,
  )
}

/** The status as the model reads it. */
export function statusText(status: JobStatus): string {
  switch (status.state) {
    case 'running':
      return 'running'
    case 'exited':
      return `exited, exit code: ${status.code}`
    case 'signaled':
      return `killed by signal: ${status.signal}`
    case 'killed':
      return 'killed'
    case 'failed':
      return `failed: ${status.message}`
    default:
      return assertNever(status, 'job status')
  }
}

function renderOutput(output: JobOutput, maxBytes: number): string {
  const lines: string[] = []
  if (output.dropped > 0)
    lines.push(`[${output.dropped} bytes of earlier output were dropped; the buffer keeps only the newest]`)
  let text = output.text
  const bytes = Buffer.from(text, 'utf8')
  if (bytes.length > maxBytes) {
    let tail = bytes.subarray(bytes.length - maxBytes)
    tail = tail.subarray(leadingContinuation(tail))
    lines.push(`[skipped ${bytes.length - tail.length} bytes of new output; showing the newest ${tail.length}]`)
    text = tail.toString('utf8')
  }
  lines.push(text === '' ? '(no new output)' : text.replace(/\n$/, ''))
  lines.push(`[status: ${statusText(output.status)}]`)
  return lines.join('\n')
}
