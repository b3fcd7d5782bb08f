import { type Branded, providerService } from '@dsh/cordis'
import type { ProcessHandle } from '@dsh/subprocess'
import type { JobStatus } from '@dsh/wire-types'

export type { JobStatus }

declare module '@dsh/cordis' {
  interface Context {
    jobs: Jobs
  }
  interface Events {
    /** @mode emit (isolated): a job ended (exited, was killed or failed). */
    'jobs/finished'(job: JobInfo): void
  }
}

/** A background job, e.g. `job-3`. Unique within one provider. */
export type JobId = Branded<string, 'JobId'>

export interface JobStartSpec {
  /** For people: what the job does, e.g. the command line. */
  label: string
  /** The running process; the job owns it from now on. */
  handle: ProcessHandle
  /** The session that owns the job. Other sessions cannot see it. */
  sessionId: string
}

export interface JobInfo {
  id: JobId
  label: string
  sessionId: string
  pid: number | undefined
  /** Epoch milliseconds. */
  startedAt: number
  status: JobStatus
  /** Bytes of output so far (stdout and stderr together). */
  outputBytes: number
  /** Bytes of output no longer kept (the buffer keeps the tail). */
  droppedBytes: number
}

export interface JobOutput {
  /** The output from `since` on, as text (stdout and stderr interleaved as they arrived). */
  text: string
  /** Where the text starts: past `since` when bytes in between were dropped. */
  from: number
  /** Where to continue reading next time. */
  offset: number
  /** Bytes between `since` and `from` that were dropped and are lost. */
  dropped: number
  status: JobStatus
}

/** Restricts a call to the jobs of one session; without it any job is visible. */
export interface JobOwner {
  sessionId?: string
}

export interface JobWaitOptions extends JobOwner {
  /** Wait for output past this offset. Default 0. */
  since?: number
  /** Give up after this many milliseconds. */
  timeoutMs: number
  /** Stop waiting when it aborts. */
  signal?: AbortSignal
}

/** No such job (or it belongs to another session). */
export class JobNotFoundError extends Error {
  override name = 'JobNotFoundError'

  constructor(readonly id: string) {
    super(`there is no background job ${id}`)
  }
}

/** The session already runs as many jobs as it may. */
export class JobLimitError extends Error {
  override name = 'JobLimitError'
}

/**
 * `ctx.jobs`: background processes owned by sessions, each with a bounded
 * buffer of its output. A provider extends this class; disposing it kills
 * every job and awaits it.
 */
export abstract class Jobs extends providerService('jobs') {
  /**
   * Takes over a running process as a job of `sessionId`. Throws
   * `JobLimitError` (after killing the process) when the session has too
   * many running jobs.
   */
  abstract start(spec: JobStartSpec): JobId

  /** One job, if it exists and (given an owner) belongs to it. */
  abstract get(id: string, owner?: JobOwner): JobInfo | undefined

  /** The jobs of one session, oldest first. */
  abstract list(sessionId: string): JobInfo[]

  /** Output from `since` (default 0) on, plus the status. Throws `JobNotFoundError`. */
  abstract output(id: string, options?: JobOwner & { since?: number }): JobOutput

  /**
   * Resolves with `output(id, {since})` as soon as there is output past
   * `since`, the job has ended, the timeout passed or the signal aborted.
   * Throws `JobNotFoundError`.
   */
  abstract waitForOutput(id: string, options: JobWaitOptions): Promise<JobOutput>

  /** Kills the job's whole process tree and resolves once it is gone. Throws `JobNotFoundError`. */
  abstract kill(id: string, owner?: JobOwner): Promise<JobInfo>

  /** Resolves when the job has ended. Throws `JobNotFoundError`. */
  abstract completion(id: string, owner?: JobOwner): Promise<JobInfo>
}
