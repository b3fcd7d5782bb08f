import type { Context } from '@dsh/cordis'
import type { SessionEvent } from '@dsh/session'
import type {} from '@dsh/tools'

/**
 * A session event as the browser gets it. A `tool/call` also carries
 * `presentation`: how its tool shows the call (title, kind, view, change,
 * command; `ctx.tools.present`), worked out on the way out and never logged,
 * so the log and what the model is sent stay as they are.
 */
export function displayed(ctx: Context, event: SessionEvent, cwd: string): SessionEvent {
  const tools = ctx.get('tools')
  if (event.type !== 'tool/call' || !tools) return event
  const data = event.data as SessionEvent<'tool/call'>['data']
  return { ...event, data: { ...data, presentation: tools.present(data, cwd) } } as SessionEvent
}

/** `displayed` over a list. */
export function displayedAll(ctx: Context, events: readonly SessionEvent[], cwd: string): SessionEvent[] {
  return events.map((event) => displayed(ctx, event, cwd))
}
