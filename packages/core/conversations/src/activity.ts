import type { Context } from '@dsh/cordis'
import { leadingContinuation } from '@dsh/jobs'
import type { OutputTail, SessionActivity } from '@dsh/wire-types'
import type { SessionAccess } from './access.ts'

/**
 * The last `maxBytes` of `text` (cut at a character boundary), after the
 * session text filters redacted the whole of it: a secret is replaced before
 * the cut, so no tail starts with the end of one.
 */
function tail(ctx: Context, text: string, dropped: number, maxBytes: number): OutputTail {
  const bytes = Buffer.from(ctx.sessions.filtered(text), 'utf8')
  if (bytes.length <= maxBytes) return { text: bytes.toString('utf8'), omittedBytes: dropped }
  const cut = bytes.subarray(bytes.length - maxBytes)
  const skip = leadingContinuation(cut)
  return { text: cut.subarray(skip).toString('utf8'), omittedBytes: dropped + bytes.length - maxBytes + skip }
}

/**
 * What a live session has running besides its turn: its background jobs
 * (`ctx.jobs`), terminals (`ctx.terminals`) and subagent sessions (live
 * sessions whose parent it is), each with the tail of its output. A stored
 * session has none: its jobs and terminals ended when it closed.
 */
export async function sessionActivity(
  ctx: Context,
  sessions: SessionAccess,
  id: string,
  maxOutputBytes: number,
): Promise<SessionActivity> {
  const activity: SessionActivity = { jobs: [], terminals: [], subagents: [] }
  if (!ctx.sessions.get(id)) {
    await sessions.readStored(id) // not-found for a session that is neither open nor stored
    return activity
  }
  const filtered = (text: string) => ctx.sessions.filtered(text)
  // list and read are synchronous: nothing ends or is forgotten in between.
  const jobs = ctx.get('jobs')
  for (const job of jobs?.list(id) ?? []) {
    const output = jobs?.output(job.id, { sessionId: id }) ?? { text: '', dropped: 0 }
    activity.jobs.push({
      id: job.id,
      label: filtered(job.label),
      startedAt: job.startedAt,
      status: job.status.state === 'failed' ? { ...job.status, message: filtered(job.status.message) } : job.status,
      output: tail(ctx, output.text, output.dropped, maxOutputBytes),
    })
  }
  const terminals = ctx.get('terminals')
  for (const terminal of terminals?.list(id) ?? []) {
    const output = terminals?.read(terminal.id) ?? { text: '', dropped: 0 }
    activity.terminals.push({
      id: terminal.id,
      command: filtered(terminal.command),
      cwd: terminal.cwd,
      startedAt: terminal.startedAt,
      status: terminal.exited ? { state: 'exited', ...terminal.exited } : { state: 'running' },
      output: tail(ctx, output.text, output.dropped, maxOutputBytes),
    })
  }
  for (const child of ctx.sessions.list()) {
    if (child.meta.parentSession !== id) continue
    const title = child.last('session/title')?.data.title ?? child.meta.title
    activity.subagents.push({
      sessionId: child.id,
      ...(title ? { title: filtered(title) } : {}),
      status: ctx.agents.get(child.id)?.status === 'running' ? 'running' : 'idle',
    })
  }
  return activity
}
