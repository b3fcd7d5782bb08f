import type { Branded, JsonValue } from './json.ts'
import type {
  FinishReason,
  LlmFailure,
  Message,
  ReasoningEffort,
  TokenUsage,
  ToolCallId,
  ToolSchema,
} from './messages.ts'
import type { PermissionAnswer, PermissionPreset, ToolCallPresentation } from './tools.ts'

export type SessionId = Branded<string, 'SessionId'>

/** Why a turn ended. `interrupted` is written only by crash repair. */
export type TurnEndReason = 'completed' | 'aborted' | 'error' | 'max-tokens' | 'interrupted'

export type CancelCause = 'user' | 'parent' | 'shutdown' | 'timeout'

export type TodoStatus = 'pending' | 'in_progress' | 'completed'

export interface Todo {
  content: string
  status: TodoStatus
  /** The present-continuous form shown while the item is in progress. */
  activeForm?: string
}

/**
 * The data of a `permission/decision` event: one per call outside the preset
 * (calls the preset allows are not logged).
 *
 * - `deny`: the approval policy is `never`, or the session is a subagent, so
 *   the call was refused unasked.
 * - `ask`: the approver was asked; `answer` says what came back (absent when
 *   the ask failed or the call was cancelled while waiting).
 * - `allow`: the user allowed this kind of action for the session earlier.
 */
export interface PermissionDecisionEvent {
  callId: ToolCallId
  tool: string
  preset: PermissionPreset
  decision: 'allow' | 'deny' | 'ask'
  /** Why the call is outside the preset, naming the tool, the path or command, and the preset. */
  reason: string
  answer?: PermissionAnswer
  /** The allow or deny rule that decided the call without asking (`bash(npm test*)`, `mcp__github__*`). */
  rule?: string
}

/**
 * The data of a `permission/preset` event: the session's preset was set by a
 * surface, or reset to the configured one (`null`). The last one holds after
 * resume or fork.
 */
export interface PermissionPresetEvent {
  preset: PermissionPreset | null
}

export type TitleSource = 'model' | 'user'

export type CompactionReason = 'threshold' | 'overflow' | 'manual'

export interface CompactionEventData {
  reason: CompactionReason
  /** Every seq taken out of the model's history: pruned tool results and summarised messages. */
  replaced: number[]
  /** The estimated context size before, in tokens. */
  tokensBefore?: number
  error?: string
}

/**
 * The data of every session event type. The first part is the core's; the
 * second the events of shipped plugins that surfaces show. Other plugins add
 * their own types by declaration merging on `@dsh/session`, which re-exports
 * this interface:
 *
 *   declare module '@dsh/session' { interface SessionEventMap { 'my/event': { n: number } } }
 */
export interface SessionEventMap {
  'turn/start': { turn: number }
  'turn/end': { turn: number; reason: TurnEndReason; error?: LlmFailure; cause?: CancelCause }
  'step/start': { turn: number; step: number }
  'step/end': { turn: number; step: number }
  /** The rendered system prompt; model-visible. */
  'system/message': { message: Message }
  /** Why the system prompt changed within a session (a new day, an edited AGENTS.md, ...); the new `system/message` follows. */
  'system/prompt-changed': { changes: Array<{ section: string; reason: string }> }
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
  /**
   * Logged before a tool runs; `arguments` is the raw JSON text from the model.
   * `presentation` is never logged: a surface may add it on the way out.
   */
  'tool/call': {
    turn: number
    step: number
    callId: ToolCallId
    name: string
    arguments: string
    presentation?: ToolCallPresentation
  }
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

  // Shipped plugins (each registers its type with ctx.sessions so logs holding it load).

  /** `@dsh/todo`: the whole todo list after a `todo_write` call. Log only; the model reads the tool result. */
  'todo/write': { todos: Todo[] }
  /** `@dsh/session-titles`: the session's title; the latest one wins. Never model-visible. */
  'session/title': { title: string; source: TitleSource }
  /** `@dsh/plan-mode`: plan mode turned on or off; `plan` is the plan the user approved. The last one holds. */
  'plan/mode': { active: boolean; plan?: string }
  /** `@dsh/compaction`: the model's history was compacted (or a compaction failed). */
  'context/compaction': CompactionEventData
  /** `@dsh/permission`: a tool call outside the permission preset, and what became of it. Never model-visible. */
  'permission/decision': PermissionDecisionEvent
  /** `@dsh/permission`: the session's own preset. Never model-visible. */
  'permission/preset': PermissionPresetEvent
  /** `@dsh/conversations`: the model settings the user chose for this session; the latest one wins. Never model-visible. */
  'conversation/settings': { provider: string; model: string; reasoningEffort?: ReasoningEffort }
}

export type SessionEventType = keyof SessionEventMap & string

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

/** The live stream of a reply, for surfaces; the durable record is the session log. */
export interface Delta {
  turn: number
  step: number
  kind: 'text' | 'reasoning' | 'tool-arguments'
  /** The content block index within the reply. */
  index: number
  delta: string
}

/** What a client needs of the events a recent-history read left out, to show the session as a whole. */
export interface EarlierHistory {
  /** The seq of the first event sent; every event before it was left out. */
  before: number
  /** The last event of each type that sets session-wide state (model, title, todos, plan mode, preset). */
  state: SessionEvent[]
  /** The token usage of those left out, summed per model. */
  usage: Array<{ model?: string; usage: Required<TokenUsage> }>
}
