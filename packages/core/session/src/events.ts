import type { Branded, JsonValue } from '@dsh/cordis'
import type { FinishReason, LlmFailure, Message, ReasoningEffort, TokenUsage, ToolCallId, ToolSchema } from '@dsh/llm'

export type SessionId = Branded<string, 'SessionId'>

/** Why a turn ended. `interrupted` is written only by crash repair. */
export type TurnEndReason = 'completed' | 'aborted' | 'error' | 'max-tokens' | 'interrupted'

export type CancelCause = 'user' | 'parent' | 'shutdown' | 'timeout'

/** A compact record of how a reply streamed: `[msSinceStart, chunk]` pairs. */
export type StreamRecord = [number, JsonValue][]

/**
 * The data of every session event type. Plugins add their own types by
 * declaration merging:
 *
 *   declare module '@dsh/session' { interface SessionEventMap { 'todo/write': { todos: Todo[] } } }
 */
export interface SessionEventMap {
  'turn/start': { turn: number }
  'turn/end': { turn: number; reason: TurnEndReason; error?: LlmFailure; cause?: CancelCause }
  'step/start': { turn: number; step: number }
  'step/end': { turn: number; step: number }
  /** The rendered system prompt; model-visible. */
  'system/message': { message: Message }
  /** A user prompt, steering, or context injected by a plugin (see message.source). */
  'user/message': { message: Message }
  /** A reply that reached the session: complete, cut by max-tokens, or `interrupted` by a cancel. */
  'assistant/message': {
    turn: number
    step: number
    message: Message
    finish: FinishReason
    usage?: TokenUsage
    interrupted?: true
  }
  /** A model call that produced no message: failed, retried or cancelled before any output. Never model-visible. */
  'assistant/attempt': { turn: number; step: number; attempt: number; error: LlmFailure; usage?: TokenUsage }
  /** Logged before a tool runs; `arguments` is the raw JSON text from the model. */
  'tool/call': { turn: number; step: number; callId: ToolCallId; name: string; arguments: string }
  /** The one model-facing outcome of a tool call. `message` is a user message holding one tool-result block. */
  'tool/result': {
    turn: number
    step: number
    callId: ToolCallId
    name: string
    message: Message
    error?: { code: string; message: string }
    meta?: JsonValue
  }
  /** What requests are sent with (route, model, settings, tool schemas); logged when it changes. */
  'request/header': {
    reason: 'initial' | 'resume' | 'change'
    provider: string
    model: string
    reasoningEffort?: ReasoningEffort
    maxTokens?: number
    tools: ToolSchema[]
  }
  /** The model's capacity as known when requests start; logged when it changes. */
  'request/context': { provider: string; model: string; contextWindow?: number }
  /** Marks where a resumed or forked session's inherited events end. */
  'session/end-seed': Record<string, never>
  /** A failed model call that will be retried after `delayMs`. */
  'llm/retry': { turn: number; step: number; attempt: number; delayMs: number; error: LlmFailure }
}

export type SessionEventType = keyof SessionEventMap & string

/** Event types whose message is part of the model's history. */
export const SURFACE_TYPES = ['system/message', 'user/message', 'assistant/message', 'tool/result'] as const
export type SurfaceEventType = (typeof SURFACE_TYPES)[number]

export interface SessionEvent<K extends SessionEventType = SessionEventType> {
  seq: number
  /** Epoch milliseconds. */
  time: number
  type: K
  data: SessionEventMap[K]
  /** A reader that does not know this type may skip it; otherwise an unknown type refuses the load. */
  ignorable?: true
  /**
   * For surface events only: the seqs of earlier surface events this one
   * replaces in the model's history (compaction). The log keeps them.
   */
  replaces?: number[]
}

export type AnySessionEvent = { [K in SessionEventType]: SessionEvent<K> }[SessionEventType]

/** Facts about a session kept outside the event log; never model-visible. */
export interface SessionMeta {
  id: SessionId
  createdAt: number
  cwd: string
  parentSession?: SessionId
  /** The session this one was forked from (a fork is not a subagent: it has no parent). */
  forkedFrom?: SessionId
  /** Number of events inherited from the parent (fork) or a previous run (resume). */
  seedLength?: number
  title?: string
}
