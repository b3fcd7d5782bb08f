import type { JobStatus, OutputTail, SessionActivity, SessionId, TerminalStatus } from '@dsh/web-client'
import { clsx } from 'clsx'
import { useCallback, useEffect, useId, useRef, useState } from 'react'
import { useApp } from '../../hooks/app-context.ts'
import { assertNever } from '../../lib/never.ts'
import { Icon } from '../common/Icon.tsx'
import styles from './ActivityPopover.module.css'
import header from './SessionHeader.module.css'

/** How often an open popover reads the activity again. */
const REFRESH_MS = 2000

function jobState(status: JobStatus): string {
  switch (status.state) {
    case 'running':
      return 'running'
    case 'exited':
      return `exited ${status.code}`
    case 'signaled':
      return `killed by ${status.signal}`
    case 'killed':
      return 'stopped'
    case 'failed':
      return `failed: ${status.message}`
    default:
      return assertNever(status, 'job status')
  }
}

function terminalState(status: TerminalStatus): string {
  if (status.state === 'running') return 'running'
  return status.signal ? `killed by ${status.signal}` : `exited ${status.code ?? ''}`
}

/** A job or terminal: what it runs, where it stands, and its newest output. */
function ProcessItem({ name, state, output }: { name: string; state: string; output: OutputTail }) {
  return (
    <article className={styles.item} aria-label={name}>
      <p className={styles.line}>
        <span className={styles.name}>{name}</span>
        <span className={clsx(styles.state, state === 'running' && styles.live)}>{state}</span>
      </p>
      <Output output={output} />
    </article>
  )
}

function Output({ output }: { output: OutputTail }) {
  return (
    <>
      {output.omittedBytes > 0 ? <p className={styles.note}>{output.omittedBytes} earlier bytes not shown</p> : null}
      <pre className={styles.output}>{output.text || '(no output yet)'}</pre>
    </>
  )
}

function runningCount(activity: SessionActivity | undefined): number {
  if (!activity) return 0
  return (
    activity.jobs.filter((job) => job.status.state === 'running').length +
    activity.terminals.filter((terminal) => terminal.status.state === 'running').length +
    activity.subagents.filter((child) => child.status === 'running').length
  )
}

/**
 * The header's Activity button and its popover: the session's background
 * jobs and terminals with the newest part of their output, and its subagent
 * sessions (linked). Read again every few seconds while it is open.
 */
export function ActivityPopover({ sessionId, running }: { sessionId: SessionId; running: boolean }) {
  const app = useApp()
  const [open, setOpen] = useState(false)
  const [activity, setActivity] = useState<SessionActivity>()
  const [error, setError] = useState<string>()
  const button = useRef<HTMLButtonElement>(null)
  const panel = useRef<HTMLDivElement>(null)
  const id = useId()

  const load = useCallback(() => {
    app.api.activity(sessionId).then(
      (next) => {
        setActivity(next)
        setError(undefined)
      },
      (e: unknown) => setError(e instanceof Error ? e.message : String(e)),
    )
  }, [app, sessionId])

  // The count on the button follows the session: read when it opens and when a turn starts or ends.
  // biome-ignore lint/correctness/useExhaustiveDependencies: a change of running is what asks for a new read
  useEffect(() => load(), [load, running])

  useEffect(() => {
    if (!open) return
    load()
    const timer = setInterval(load, REFRESH_MS)
    const close = (event: MouseEvent) => {
      if (!panel.current?.contains(event.target as Node) && !button.current?.contains(event.target as Node))
        setOpen(false)
    }
    const onEscape = (event: KeyboardEvent) => {
      if (event.key !== 'Escape' || event.defaultPrevented) return
      setOpen(false)
      button.current?.focus()
    }
    document.addEventListener('mousedown', close)
    document.addEventListener('keydown', onEscape)
    return () => {
      clearInterval(timer)
      document.removeEventListener('mousedown', close)
      document.removeEventListener('keydown', onEscape)
    }
  }, [open, load])

  const count = runningCount(activity)
  const empty = activity && !activity.jobs.length && !activity.terminals.length && !activity.subagents.length
  return (
    <div className={styles.wrap}>
      <button
        ref={button}
        type="button"
        className={clsx(header.chip, header.control, count > 0 && header.on)}
        title="Background jobs, terminals and subagents of this session"
        aria-haspopup="dialog"
        aria-expanded={open}
        aria-controls={open ? id : undefined}
        onClick={() => setOpen(!open)}
      >
        <Icon name="activity" size={12} /> Activity{count > 0 ? ` · ${count}` : ''}
      </button>
      {open ? (
        <div ref={panel} id={id} role="dialog" aria-label="Background activity" className={styles.panel}>
          {error ? <p role="alert">{error}</p> : null}
          {!activity && !error ? <p className={styles.note}>Loading…</p> : null}
          {empty ? <p className={styles.note}>Nothing runs in the background.</p> : null}
          {activity?.jobs.length ? (
            <section aria-label="Background jobs">
              <h2 className={styles.heading}>Background jobs</h2>
              {activity.jobs.map((job) => (
                <ProcessItem key={job.id} name={job.label} state={jobState(job.status)} output={job.output} />
              ))}
            </section>
          ) : null}
          {activity?.terminals.length ? (
            <section aria-label="Terminals">
              <h2 className={styles.heading}>Terminals</h2>
              {activity.terminals.map((terminal) => (
                <ProcessItem
                  key={terminal.id}
                  name={terminal.command}
                  state={terminalState(terminal.status)}
                  output={terminal.output}
                />
              ))}
            </section>
          ) : null}
          {activity?.subagents.length ? (
            <section aria-label="Subagents">
              <h2 className={styles.heading}>Subagents</h2>
              <ul className={styles.children}>
                {activity.subagents.map((child) => (
                  <li key={child.sessionId} className={styles.line}>
                    <a className={styles.name} href={`#/session/${encodeURIComponent(child.sessionId)}`}>
                      {child.title ?? child.sessionId}
                    </a>
                    <span className={clsx(styles.state, child.status === 'running' && styles.live)}>
                      {child.status}
                    </span>
                  </li>
                ))}
              </ul>
            </section>
          ) : null}
        </div>
      ) : null}
    </div>
  )
}
