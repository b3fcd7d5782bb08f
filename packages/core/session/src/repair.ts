import { randomUUID } from 'node:crypto'
import type { Message, MessageId, ToolCallId } from '@dsh/llm'
import type { AnySessionEvent, SessionEvent, SessionEventMap, SessionEventType } from './events.ts'

export interface Closer<K extends SessionEventType = SessionEventType> {
  type: K
  data: SessionEventMap[K]
}

function toolResult(
  turn: number,
  step: number,
  callId: ToolCallId,
  name: string,
  code: string,
  text: string,
): Closer<'tool/result'> {
  const message: Message = {
    id: randomUUID() as MessageId,
    role: 'user',
    source: { kind: 'tool', name },
    content: [{ type: 'tool-result', toolCallId: callId, isError: true, content: [{ type: 'text', text }] }],
  }
  return { type: 'tool/result', data: { turn, step, callId, name, message, error: { code, message: text } } }
}

/**
 * The events that close a log whose last turn never ended (the process died
 * mid-turn): a result for every tool call left without one, the open step's
 * end, and `turn/end{interrupted}`. Nothing committed is changed. Empty when
 * the log ends at a turn boundary.
 */
export function closersForOpenTurn(events: readonly SessionEvent[]): Closer[] {
  let turnStart = -1
  for (let i = events.length - 1; i >= 0; i--) {
    const type = events[i]?.type
    if (type === 'turn/end') return []
    if (type === 'turn/start') {
      turnStart = i
      break
    }
  }
  if (turnStart < 0) return []
  const tail = events.slice(turnStart) as AnySessionEvent[]
  const turn = (tail[0] as SessionEvent<'turn/start'>).data.turn
  let step = 0
  let stepOpen = false
  const requested = new Map<string, string>()
  const started = new Map<string, string>()
  const answered = new Set<string>()
  for (const event of tail) {
    if (event.type === 'step/start') {
      step = event.data.step
      stepOpen = true
      requested.clear()
      started.clear()
      answered.clear()
    } else if (event.type === 'step/end') stepOpen = false
    else if (event.type === 'assistant/message') {
      for (const block of event.data.message.content)
        if (block.type === 'tool-call') requested.set(block.id, block.name)
    } else if (event.type === 'tool/call') started.set(event.data.callId, event.data.name)
    else if (event.type === 'tool/result') answered.add(event.data.callId)
  }
  const closers: Closer[] = []
  if (stepOpen) {
    for (const [callId, name] of requested) {
      if (answered.has(callId)) continue
      closers.push(
        started.has(callId)
          ? toolResult(
              turn,
              step,
              callId as ToolCallId,
              name,
              'TOOL_OUTCOME_UNKNOWN',
              'The session stopped while this tool was running, so its outcome is unknown. Repeat it only if it is read-only or idempotent; otherwise check for its effects first or ask the user.',
            )
          : toolResult(
              turn,
              step,
              callId as ToolCallId,
              name,
              'TOOL_NOT_STARTED',
              'The session stopped before this tool call ran; it had no effect.',
            ),
      )
    }
    closers.push({ type: 'step/end', data: { turn, step } })
  }
  closers.push({ type: 'turn/end', data: { turn, reason: 'interrupted' } })
  return closers
}
