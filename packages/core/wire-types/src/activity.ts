/** Where a background job stands. */
export type JobStatus =
  | { state: 'running' }
  | { state: 'exited'; code: number }
  | { state: 'signaled'; signal: string }
  /** Stopped by `kill()`, a timeout of the process, or disposal. */
  | { state: 'killed' }
  /** The process could not be started. */
  | { state: 'failed'; message: string }

/** The newest part of a process's output, and how many bytes before it are not shown. */
export interface OutputTail {
  text: string
  omittedBytes: number
}

/** Where a persistent terminal stands; an exited one has a code or the signal that ended it. */
export type TerminalStatus = { state: 'running' } | { state: 'exited'; code: number | null; signal: string | null }

/** What a session has going besides its turn (`GET /api/sessions/:id/activity`). */
export interface SessionActivity {
  jobs: Array<{ id: string; label: string; startedAt: number; status: JobStatus; output: OutputTail }>
  terminals: Array<{
    id: string
    command: string
    cwd: string
    startedAt: number
    status: TerminalStatus
    output: OutputTail
  }>
  subagents: Array<{ sessionId: string; title?: string; status: 'running' | 'idle' }>
}
