import { type Context, emitIsolated, Schema } from '@dsh/cordis'
import type { ProcessExit, ProcessHandle } from '@dsh/subprocess'
import { incompleteTail, leadingContinuation, OutputRing } from './ring.ts'
import {
  type JobId,
  type JobInfo,
  JobLimitError,
  JobNotFoundError,
  type JobOutput,
  type JobOwner,
  Jobs,
  type JobStartSpec,
  type JobStatus,
  type JobWaitOptions,
} from './seam.ts'

export interface LocalJobsConfig {
  maxBufferedBytes: number
  maxRunningPerSession: number
  keepFinishedPerSession: number
}

export const Config: Schema<LocalJobsConfig> = Schema.object({
  maxBufferedBytes: Schema.natural()
    .min(1)
    .default(1024 * 1024)
    .description('Output kept per job (stdout and stderr together): the tail; older bytes are dropped and counted.'),
  maxRunningPerSession: Schema.natural().min(1).default(10).description('How many jobs one session may run at once.'),
  keepFinishedPerSession: Schema.natural()
    .default(20)
    .description('How many ended jobs of a session are remembered (with their output); older ones are forgotten.'),
})

interface JobRecord {
  id: JobId
  label: string
  sessionId: string
  handle: ProcessHandle
  startedAt: number
  ring: OutputRing
  status: JobStatus
  finished: Promise<JobInfo>
  /** Called on new output and when the job ends. */
  waiters: Set<() => void>
  killing: boolean
}

/** The in-process provider of `ctx.jobs`. */
export class LocalJobs extends Jobs {
  static Config = Config

  private readonly settings: LocalJobsConfig
  private readonly jobs = new Map<string, JobRecord>()
  private counter = 0
  private disposed = false

  constructor(ctx: Context, config: LocalJobsConfig) {
    super(ctx)
    this.settings = config
    ctx.effect(() => () => this.stopAll(), 'jobs: kill every job')
    // A session's jobs end with it (a web session unloaded, an SDK session closed), not only with dsh.
    ctx.on('session/closed', (session) =>
      this.killRunning([...this.jobs.values()].filter((record) => record.sessionId === session.id)),
    )
  }

  start(spec: JobStartSpec): JobId {
    const { handle } = spec
    if (this.disposed) {
      void handle.kill()
      throw new Error('the jobs service is disposed; no new job can start')
    }
    if (typeof spec.sessionId !== 'string' || spec.sessionId === '') {
      void handle.kill()
      throw new TypeError('jobs: a job needs the id of the session that owns it')
    }
    const running = this.records(spec.sessionId).filter((job) => job.status.state === 'running').length
    if (running >= this.settings.maxRunningPerSession) {
      void handle.kill()
      throw new JobLimitError(
        `this session already runs ${running} background jobs, the most it may; wait for one to end or kill one (job_kill) before starting another`,
      )
    }
    this.counter += 1
    const id = `job-${this.counter}` as JobId
    const record: JobRecord = {
      id,
      label: spec.label,
      sessionId: spec.sessionId,
      handle,
      startedAt: Date.now(),
      ring: new OutputRing(this.settings.maxBufferedBytes),
      status: { state: 'running' },
      finished: Promise.resolve(undefined as never),
      waiters: new Set(),
      killing: false,
    }
    const onData = (chunk: Buffer) => {
      record.ring.push(chunk)
      this.notify(record)
    }
    for (const stream of [handle.stdout, handle.stderr]) {
      stream.on('data', onData)
      stream.on('error', () => {}) // a destroyed pipe is not the job's failure
    }
    record.finished = handle.done.then(
      (exit) => this.finish(record, statusOf(exit, record.killing)),
      (error: unknown) =>
        this.finish(record, { state: 'failed', message: error instanceof Error ? error.message : String(error) }),
    )
    this.jobs.set(id, record)
    return id
  }

  get(id: string, owner?: JobOwner): JobInfo | undefined {
    const record = this.find(id, owner)
    return record && infoOf(record)
  }

  list(sessionId: string): JobInfo[] {
    return this.records(sessionId).map(infoOf)
  }

  output(id: string, options: JobOwner & { since?: number } = {}): JobOutput {
    return readOutput(this.require(id, options), options.since ?? 0)
  }

  async waitForOutput(id: string, options: JobWaitOptions): Promise<JobOutput> {
    const record = this.require(id, options)
    const since = options.since ?? 0
    const ready = () => record.status.state !== 'running' || record.ring.end > since
    if (!ready() && !options.signal?.aborted && options.timeoutMs > 0) {
      await new Promise<void>((resolve) => {
        const finish = () => {
          clearTimeout(timer)
          record.waiters.delete(check)
          options.signal?.removeEventListener('abort', finish)
          resolve()
        }
        const check = () => {
          if (ready()) finish()
        }
        const timer = setTimeout(finish, options.timeoutMs)
        record.waiters.add(check)
        options.signal?.addEventListener('abort', finish, { once: true })
      })
    }
    return readOutput(record, since)
  }

  async kill(id: string, owner?: JobOwner): Promise<JobInfo> {
    const record = this.require(id, owner)
    if (record.status.state === 'running') record.killing = true
    // Also stops background processes an ended job left behind.
    await record.handle.kill()
    return record.finished
  }

  completion(id: string, owner?: JobOwner): Promise<JobInfo> {
    return this.require(id, owner).finished
  }

  private finish(record: JobRecord, status: JobStatus): JobInfo {
    record.status = status
    this.notify(record)
    this.forgetOldFinished(record.sessionId)
    const info = infoOf(record)
    if (!this.disposed) void emitIsolated(this.home, 'jobs/finished', info)
    return info
  }

  private notify(record: JobRecord): void {
    for (const waiter of [...record.waiters]) waiter()
  }

  private forgetOldFinished(sessionId: string): void {
    const finished = this.records(sessionId).filter((job) => job.status.state !== 'running')
    for (const job of finished.slice(0, Math.max(0, finished.length - this.settings.keepFinishedPerSession)))
      this.jobs.delete(job.id)
  }

  private records(sessionId: string): JobRecord[] {
    return [...this.jobs.values()].filter((job) => job.sessionId === sessionId)
  }

  private find(id: string, owner?: JobOwner): JobRecord | undefined {
    const record = this.jobs.get(id)
    if (!record) return undefined
    if (owner?.sessionId !== undefined && owner.sessionId !== record.sessionId) return undefined
    return record
  }

  private require(id: string, owner?: JobOwner): JobRecord {
    const record = this.find(id, owner)
    if (!record) throw new JobNotFoundError(id)
    return record
  }

  private async stopAll(): Promise<void> {
    this.disposed = true
    const records = [...this.jobs.values()]
    await this.killRunning(records)
    await Promise.allSettled(records.map((record) => record.finished))
  }

  /** Kills those of `records` still running; they end as `killed`. */
  private async killRunning(records: JobRecord[]): Promise<void> {
    const running = records.filter((record) => record.status.state === 'running')
    for (const record of running) record.killing = true
    await Promise.allSettled(running.map((record) => record.handle.kill()))
  }
}

function statusOf(exit: ProcessExit, killing: boolean): JobStatus {
  if (killing || exit.cancelled || exit.timedOut) return { state: 'killed' }
  if (exit.signal !== null) return { state: 'signaled', signal: exit.signal }
  return { state: 'exited', code: exit.code ?? 0 }
}

function infoOf(record: JobRecord): JobInfo {
  return {
    id: record.id,
    label: record.label,
    sessionId: record.sessionId,
    pid: record.handle.pid,
    startedAt: record.startedAt,
    status: record.status,
    outputBytes: record.ring.end,
    droppedBytes: record.ring.dropped,
  }
}

/**
 * The text from `since` on. A character cut by the dropped part is skipped;
 * while the job runs, a character not complete yet is left for the next read.
 */
function readOutput(record: JobRecord, since: number): JobOutput {
  const { bytes, from } = record.ring.read(since)
  let start = 0
  if (from > since) start = leadingContinuation(bytes)
  const end = record.status.state === 'running' ? bytes.length - incompleteTail(bytes.subarray(start)) : bytes.length
  const text = bytes.subarray(start, Math.max(start, end)).toString('utf8')
  return {
    text,
    from: from + start,
    offset: from + Math.max(start, end),
    dropped: Math.max(0, from + start - since),
    status: record.status,
  }
}
