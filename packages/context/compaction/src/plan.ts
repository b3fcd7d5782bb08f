import type { Message } from '@dsh/llm'
import { messageOf, type Session, type SessionEvent } from '@dsh/session'

/**
 * A piece of the model's history that is kept or summarised whole: the
 * system prompt, one user message, or a step (a reply with the results of
 * the tool calls it made), so a tool call never loses its result.
 */
export interface Unit {
  kind: 'system' | 'user' | 'summary' | 'pinned' | 'step'
  turn: number
  events: SessionEvent[]
}

export interface Retention {
  keepTurns: number
  keepSteps: number
}

export const SUMMARY_PLUGIN = 'compaction'

function userKind(message: Message | undefined): Unit['kind'] {
  const source = message?.source
  if (source?.kind !== 'plugin') return 'user'
  if (source.plugin === SUMMARY_PLUGIN && source.form === 'summary') return 'summary'
  // Instructions (AGENTS.md and the like) stay where they are: the model needs them whole.
  if (source.form === 'instructions') return 'pinned'
  return 'user'
}

/** The history as units, in order. */
export function unitsOf(session: Session): Unit[] {
  const events = new Map<number, SessionEvent>()
  const starts: SessionEvent<'turn/start'>[] = []
  for (const event of session.events) {
    events.set(event.seq, event)
    if (event.type === 'turn/start') starts.push(event as SessionEvent<'turn/start'>)
  }
  /** The turn open when `seq` was appended (0 before the first): a binary search over the turn starts. */
  const turnOf = (seq: number) => {
    let low = 0
    let high = starts.length
    while (low < high) {
      const mid = (low + high) >> 1
      if ((starts[mid] as SessionEvent<'turn/start'>).seq <= seq) low = mid + 1
      else high = mid
    }
    return low === 0 ? 0 : (starts[low - 1] as SessionEvent<'turn/start'>).data.turn
  }
  const units: Unit[] = []
  const stepOfCall = new Map<string, Unit>()
  for (const seq of session.surface()) {
    const event = events.get(seq)
    if (!event) continue
    const turn = turnOf(seq)
    if (event.type === 'system/message') units.push({ kind: 'system', turn, events: [event] })
    else if (event.type === 'user/message') units.push({ kind: userKind(messageOf(event)), turn, events: [event] })
    else if (event.type === 'assistant/message') {
      const unit: Unit = { kind: 'step', turn, events: [event] }
      units.push(unit)
      for (const block of (event as SessionEvent<'assistant/message'>).data.message.content)
        if (block.type === 'tool-call') stepOfCall.set(block.id, unit)
    } else if (event.type === 'tool/result') {
      const owner = stepOfCall.get((event as SessionEvent<'tool/result'>).data.callId)
      if (owner) owner.events.push(event)
      else units.push({ kind: 'step', turn, events: [event] })
    }
  }
  return units
}

/**
 * What may be summarised, oldest first. Kept verbatim: the system prompt,
 * pinned messages, and the newest `keepTurns` turns, except that of those
 * turns only the newest `keepSteps` steps (and what follows them) and the
 * user's messages stay; their older steps are summarised too, so one long
 * turn can still be compacted.
 */
export function summarisable(units: readonly Unit[], retention: Retention): Unit[] {
  const keptTurns: number[] = []
  let regionStart = units.length
  for (let i = units.length - 1; i >= 0; i--) {
    const unit = units[i] as Unit
    if (unit.kind === 'system' || unit.kind === 'pinned') continue
    if (!keptTurns.includes(unit.turn)) {
      if (keptTurns.length >= retention.keepTurns) break
      keptTurns.push(unit.turn)
    }
    regionStart = i
  }
  let tailStart = regionStart
  let steps = 0
  for (let i = units.length - 1; i >= regionStart && steps < retention.keepSteps; i--) {
    if ((units[i] as Unit).kind !== 'step') continue
    steps++
    if (steps === retention.keepSteps) tailStart = i
  }
  return units.filter((unit, i) => {
    if (unit.kind === 'system' || unit.kind === 'pinned' || i >= tailStart) return false
    return i < regionStart || unit.kind !== 'user'
  })
}

/** The tool results older than the newest `keepSteps` steps whose text is longer than `minChars`. */
export function prunable(units: readonly Unit[], keepSteps: number, minChars: number): SessionEvent<'tool/result'>[] {
  const steps = units.filter((unit) => unit.kind === 'step')
  const old = steps.slice(0, Math.max(0, steps.length - keepSteps))
  return old.flatMap((unit) =>
    unit.events.filter(
      (event): event is SessionEvent<'tool/result'> =>
        event.type === 'tool/result' && resultChars(event as SessionEvent<'tool/result'>) > minChars,
    ),
  )
}

export function resultChars(event: SessionEvent<'tool/result'>): number {
  let chars = 0
  for (const block of event.data.message.content) {
    if (block.type !== 'tool-result') continue
    for (const inner of block.content) if (inner.type === 'text') chars += inner.text.length
  }
  return chars
}

/** True when every tool call among `events` has its result among them and every result its call. */
export function pairsIntact(events: readonly SessionEvent[]): boolean {
  const calls = new Set<string>()
  const results = new Set<string>()
  for (const event of events) {
    if (event.type === 'assistant/message') {
      for (const block of (event as SessionEvent<'assistant/message'>).data.message.content)
        if (block.type === 'tool-call') calls.add(block.id)
    } else if (event.type === 'tool/result') results.add((event as SessionEvent<'tool/result'>).data.callId)
  }
  return calls.size === results.size && [...calls].every((id) => results.has(id))
}
