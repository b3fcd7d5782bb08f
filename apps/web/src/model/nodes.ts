import type { ContextUse, ImageAttachment, JsonValue, Todo, TokenUsage, ToolCallPresentation } from '@dsh/web-client'

/** One row of the conversation view. Nodes are immutable: a change makes a new object with the same key. */
export type ConversationNode = UserNode | ContextNode | TextNode | ReasoningNode | ToolNode | TurnEndNode | NoticeNode

export interface UserNode {
  kind: 'user'
  key: string
  /** The message's id in the log (what a rewind goes back to). */
  messageId: string
  /** The turn it belongs to (what a fork keeps up to the end of). */
  turn?: number
  text: string
  images: ImageAttachment[]
  time: number
}

/** A message a plugin put into the history (instructions, context, a summary). */
export interface ContextNode {
  kind: 'context'
  key: string
  plugin: string
  form?: string
  text: string
}

export interface TextNode {
  kind: 'text'
  key: string
  /** The turn of the reply (absent while a draft streams). */
  turn?: number
  text: string
  streaming: boolean
  /** Joined mid-stream (page opened or socket back while the reply streamed): the start is missing until the reply lands. */
  partial?: boolean
}

export interface ReasoningNode {
  kind: 'reasoning'
  key: string
  text: string
  streaming: boolean
  partial?: boolean
}

export type ToolStatus = 'streaming' | 'pending' | 'running' | 'done' | 'error' | 'cancelled'

export interface ToolDecision {
  decision: 'allow' | 'deny' | 'ask'
  answer?: string
  reason: string
}

export interface ToolNode {
  kind: 'tool'
  key: string
  callId?: string
  name: string
  /** The raw JSON text of the arguments (partial while streaming). */
  args: string
  status: ToolStatus
  /** How the tool shows this call (title, view), from its `tool/call` event; absent while the call streams. */
  presentation?: ToolCallPresentation
  result?: string
  resultImages?: ImageAttachment[]
  error?: { code: string; message: string }
  meta?: JsonValue
  decision?: ToolDecision
}

export interface TurnEndNode {
  kind: 'turn-end'
  key: string
  turn: number
  reason: string
  error?: { code: string; message: string; status?: number }
  usage: TokenUsage
  cost?: number
  model?: string
  durationMs?: number
}

export interface NoticeNode {
  kind: 'notice'
  key: string
  tone: 'info' | 'warn' | 'error'
  text: string
  code?: string
}

export interface ConversationState {
  nodes: readonly ConversationNode[]
  title?: string
  todos: readonly Todo[]
  provider?: string
  model?: string
  reasoningEffort?: string
  planMode: boolean
  running: boolean
  lastSeq: number
  totalUsage: TokenUsage
  /** The session's cost in USD, as the server meters it; absent when its models have no price. */
  totalCost?: number
  /** How full the model's context window is after the last reply. */
  context?: ContextUse
}
