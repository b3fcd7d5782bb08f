import { assertNever, type Context, Schema } from '@dsh/cordis'
import { defineTool, textArgument, ToolError, type ToolRunContext } from '@dsh/tools'
import { z } from 'zod'
import { leadingContinuation } from './ring.ts'
import { type JobInfo, JobNotFoundError, type JobOutput, type JobStatus } from './seam.ts'

export interface JobToolsConfig {
  maxWaitMs: number
  maxReadBytes: number
  timeoutAllowanceMs: number
}

export const Config: Schema<JobToolsConfig> = Schema.object({
  maxWaitMs: Schema.natural()
    .min(1)
    .default(600_000)
    .description('The longest `wait_ms` a `job_output` call may ask for, in milliseconds.'),
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
})

export const name = 'tool-jobs'
export const inject = ['tools', 'jobs']

const CURSORS = 'jobs:read-offsets'

/** Registers `job_output`, `job_list` and `job_kill`: the model's view of its own session's background jobs. */
export function apply(ctx: Context, config: JobToolsConfig) {
  const jobs = ctx.jobs

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
        'and its status. Give wait_ms to wait up to that long for new output or for the job to end. Do not poll in a tight loop; ' +
        `prefer one call with wait_ms. At most the newest ${config.maxReadBytes} bytes are returned per call.`,
      parameters: z.object({
        job_id: z.string().min(1).describe('The id the job was started with, e.g. job-1.'),
        wait_ms: z
          .number()
          .int()
          .min(0)
          .max(config.maxWaitMs)
          .optional()
          .describe(
            'Wait up to this many milliseconds for new output or the end of the job. Default 0: answer at once.',
          ),
      }),
      readOnly: true,
      timeoutMs: config.maxWaitMs + config.timeoutAllowanceMs,
      access: (args) => ({ kind: 'read', summary: `output of background job ${args.job_id}` }),
      async execute(args, run) {
        const owner = { sessionId: run.sessionId }
        const cursors = cursorsOf(run)
        const since = cursors.get(args.job_id) ?? 0
        const output = await notFoundAsToolError(args.job_id, () =>
          args.wait_ms
            ? jobs.waitForOutput(args.job_id, { ...owner, since, timeoutMs: args.wait_ms, signal: run.signal })
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
      parameters: z.object({}),
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
      parameters: z.object({ job_id: z.string().min(1).describe('The id of the job to stop.') }),
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
        const after: JobInfo = await notFoundAsToolError(args.job_id, () => jobs.kill(args.job_id, owner))
        return {
          content: `stopped job ${args.job_id} (${after.label}) [status: ${statusText(after.status)}]`,
          meta: { status: after.status },
        }
      },
    }),
  )
}

function cursorsOf(run: ToolRunContext): Map<string, number> {
  let cursors = run.sessionState.get(CURSORS)
  if (!(cursors instanceof Map)) {
    cursors = new Map<string, number>()
    run.sessionState.set(CURSORS, cursors)
  }
  return cursors as Map<string, number>
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
