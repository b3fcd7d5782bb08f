import { addUsage, noUsage, type TokenUsage } from '@dsh/llm'
import type { SessionEvent } from '@dsh/session'
import { eventUsage } from '@dsh/token-meter'
import type { EarlierHistory } from '@dsh/wire-types'

/** Event types whose latest instance holds state of the whole session (title, model, todos, modes). */
const SESSION_STATE_TYPES: readonly string[] = [
  'request/header',
  'session/title',
  'todo/write',
  'plan/mode',
  'permission/preset',
]

/**
 * The recent part of a log: at least its last `tail` events, starting at a
 * turn start so every turn sent is whole. A last turn longer than `tail` is
 * sent whole too.
 */
export function recentHistory(
  events: readonly SessionEvent[],
  tail: number,
): { events: readonly SessionEvent[]; earlier?: EarlierHistory } {
  let cut = events.length - tail
  while (cut > 0 && events[cut]?.type !== 'turn/start') cut--
  if (cut <= 0) return { events }
  const left = events.slice(0, cut)
  return {
    events: events.slice(cut),
    earlier: { before: (events[cut] as SessionEvent).seq, state: latestState(left), usage: usageByModel(left) },
  }
}

function latestState(events: readonly SessionEvent[]): SessionEvent[] {
  const latest = new Map<string, SessionEvent>()
  for (const event of events) if (SESSION_STATE_TYPES.includes(event.type)) latest.set(event.type, event)
  return [...latest.values()].sort((a, b) => a.seq - b.seq)
}

/**
 * Usage per model: a reply counts for the model that wrote it, a failed
 * attempt for the model of the latest request header.
 */
function usageByModel(events: readonly SessionEvent[]): EarlierHistory['usage'] {
  const totals = new Map<string | undefined, Required<TokenUsage>>()
  let requested: string | undefined
  for (const event of events) {
    if (event.type === 'request/header') requested = (event as SessionEvent<'request/header'>).data.model
    const usage = eventUsage(event)
    if (!usage) continue
    const source =
      event.type === 'assistant/message' ? (event as SessionEvent<'assistant/message'>).data.message.source : undefined
    const model = source?.kind === 'model' ? source.model : requested
    const sum = totals.get(model) ?? noUsage()
    addUsage(sum, usage)
    totals.set(model, sum)
  }
  return [...totals].map(([model, usage]) => (model === undefined ? { usage } : { model, usage }))
}
