import type { ContentBlock as AcpContent, PlanEntry, SessionUpdate } from '@agentclientprotocol/sdk'
import type { AgentDelta } from '@dsh/agent'
import type { Message } from '@dsh/llm'
import type { AnySessionEvent, SessionEvent } from '@dsh/session'
import type { UsageReport } from '@dsh/wire-types'
import type { ToolViews } from './tool-view.ts'

/**
 * A session's context use and cumulative cost as ACP's `usage_update`; none
 * before the first reply (nothing is known of the context yet).
 */
export function usageUpdate(report: UsageReport): SessionUpdate[] {
  if (!report.context) return []
  return [
    {
      sessionUpdate: 'usage_update',
      used: report.context.tokens,
      size: report.context.window,
      ...(report.costUsd !== undefined ? { cost: { amount: report.costUsd, currency: 'USD' } } : {}),
    },
  ]
}

/**
 * Turns one session's events into ACP `session/update`s. `live` is for a
 * running prompt: text and reasoning come from the stream (`agent/delta`), so
 * committed replies only announce their tool calls. `replay` is for
 * `session/load`: the whole history, user messages and replies included, each
 * tool call as `tool_call` plus one `tool_call_update` with its final status.
 * Live calls go `pending` (announced), `in_progress` (`started`: allowed and
 * running), then `completed` or `failed`.
 */
export class SessionUpdates {
  /** Tool calls the client has been told about, by call id. */
  private readonly announced = new Map<string, { name: string; arguments: string }>()

  /** The session's tool calls as ACP shows them (`toolCall` is also what a permission request shows). */
  constructor(readonly views: ToolViews) {}

  /** Streamed text and reasoning; the arguments of a tool call are shown once the call is announced. */
  delta(delta: AgentDelta): SessionUpdate[] {
    return delta.kind === 'tool-arguments' ? [] : agentChunk(delta.kind, delta.delta)
  }

  live(event: SessionEvent): SessionUpdate[] {
    return this.map(event, false)
  }

  replay(event: SessionEvent): SessionUpdate[] {
    return this.map(event, true)
  }

  private map(event: SessionEvent, replay: boolean): SessionUpdate[] {
    const typed = event as AnySessionEvent
    switch (typed.type) {
      case 'user/message':
        return replay && typed.data.message.source.kind === 'user' ? userChunks(typed.data.message) : []
      case 'assistant/message': {
        const out: SessionUpdate[] = []
        for (const block of typed.data.message.content) {
          if (block.type === 'tool-call') out.push(...this.announce(block.id, block.name, block.arguments))
          else if (replay && (block.type === 'reasoning' || block.type === 'text'))
            out.push(...agentChunk(block.type, block.text))
        }
        return out
      }
      case 'tool/call': {
        const { callId, name } = typed.data
        return this.announced.has(callId) ? [] : this.announce(callId, name, typed.data.arguments)
      }
      case 'tool/result': {
        const { callId, name } = typed.data
        const out = this.announced.has(callId) ? [] : this.announce(callId, name, '')
        const result = typed.data.message.content.find((b) => b.type === 'tool-result')
        const failed = typed.data.error !== undefined || (result?.type === 'tool-result' && result.isError === true)
        const blocks = result?.type === 'tool-result' ? result.content : []
        const content = this.views.resultContent(name, blocks, failed, {
          arguments: this.announced.get(callId)?.arguments ?? '',
          meta: typed.data.meta,
        })
        out.push({
          sessionUpdate: 'tool_call_update',
          toolCallId: callId,
          status: failed ? 'failed' : 'completed',
          ...(content ? { content } : {}),
        })
        return out
      }
      default:
        return this.plugin(event)
    }
  }

  /** Events of plugins this package does not depend on, read by their documented shapes. */
  private plugin(event: SessionEvent): SessionUpdate[] {
    const type = event.type as string
    if (type === 'todo/write') {
      const todos = (event.data as { todos?: unknown }).todos
      if (!Array.isArray(todos)) return []
      const entries: PlanEntry[] = todos
        .filter(
          (t): t is { content: string; status: PlanEntry['status'] } =>
            typeof t?.content === 'string' && ['pending', 'in_progress', 'completed'].includes(t?.status),
        )
        .map((t) => ({ content: t.content, status: t.status, priority: 'medium' }))
      return [{ sessionUpdate: 'plan', entries }]
    }
    if (type === 'session/title') {
      const title = (event.data as { title?: unknown }).title
      return typeof title === 'string' ? [{ sessionUpdate: 'session_info_update', title }] : []
    }
    return []
  }

  /** A call's body started: it was allowed (after a permission request, if one was needed). */
  started(callId: string): SessionUpdate[] {
    return [{ sessionUpdate: 'tool_call_update', toolCallId: callId, status: 'in_progress' }]
  }

  private announce(callId: string, name: string, rawArguments: string): SessionUpdate[] {
    this.announced.set(callId, { name, arguments: rawArguments })
    return [{ sessionUpdate: 'tool_call', ...this.views.toolCall(callId, name, rawArguments) }]
  }
}

/** The model's text or reasoning as ACP's chunk; none for empty text. */
function agentChunk(kind: 'text' | 'reasoning', text: string): SessionUpdate[] {
  const sessionUpdate = kind === 'text' ? 'agent_message_chunk' : 'agent_thought_chunk'
  return text ? [{ sessionUpdate, content: { type: 'text', text } }] : []
}

/** A user's message replayed: its non-empty text and its images, a chunk each. */
function userChunks(message: Message): SessionUpdate[] {
  return message.content.flatMap((block): SessionUpdate[] => {
    if (block.type === 'text' && block.text)
      return [{ sessionUpdate: 'user_message_chunk', content: { type: 'text', text: block.text } }]
    if (block.type !== 'image') return []
    const content: AcpContent = { type: 'image', mimeType: block.mediaType, data: block.data }
    return [{ sessionUpdate: 'user_message_chunk', content }]
  })
}
