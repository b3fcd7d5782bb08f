/**
 * The JSON shapes of the dsh web API (packages/host/web-server/API.md), as
 * the browser sees them. They mirror the server's types without importing
 * Node packages, so this file compiles for the DOM alone; the typecheck of
 * apps/cli/tests/web-wire-types.check.ts fails when they drift apart.
 */

declare const brand: unique symbol
export type Branded<T, B extends string> = T & { readonly [brand]: B }

export type SessionId = Branded<string, 'SessionId'>
export type RequestId = Branded<string, 'RequestId'>
export type ToolCallId = Branded<string, 'ToolCallId'>

export type ContentBlock =
  | { type: 'text'; text: string }
  | { type: 'reasoning'; text: string }
  | { type: 'image'; mediaType: string; data: string }
  | { type: 'tool-call'; id: ToolCallId; name: string; arguments: string }
  | { type: 'tool-result'; toolCallId: ToolCallId; content: ContentBlock[]; isError?: boolean }

export type MessageSource =
  | { kind: 'user' }
  | { kind: 'system' }
  | { kind: 'model'; provider: string; model: string }
  | { kind: 'tool'; name: string }
  | { kind: 'plugin'; plugin: string; form?: 'instructions' | 'context' | 'summary' | 'notice' }

export interface Message {
  id: string
  role: 'system' | 'user' | 'assistant'
  content: ContentBlock[]
  source: MessageSource
}

export interface TokenUsage {
  inputTokens: number
  outputTokens: number
  cacheReadTokens?: number
  reasoningTokens?: number
}

export interface LlmFailure {
  code: string
  message: string
  status?: number
  retryAfterMs?: number
  requestId?: string
}

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue }

export type TodoStatus = 'pending' | 'in_progress' | 'completed'
export interface Todo {
  content: string
  status: TodoStatus
  activeForm?: string
}

export type PermissionPreset = 'read-only' | 'workspace-write' | 'danger-full-access'
export type ApprovalDecision = 'allow-once' | 'allow-session' | 'reject'

/** The data of each session event type the app understands. */
export interface SessionEventMap {
  'turn/start': { turn: number }
  'turn/end': { turn: number; reason: 'completed' | 'aborted' | 'error' | 'max-tokens' | 'interrupted'; error?: LlmFailure; cause?: string }
  'step/start': { turn: number; step: number }
  'step/end': { turn: number; step: number }
  'system/message': { message: Message }
  'user/message': { message: Message }
  'assistant/message': { turn: number; step: number; message: Message; finish: string; usage?: TokenUsage; interrupted?: true }
  'assistant/attempt': { turn: number; step: number; attempt: number; error: LlmFailure; usage?: TokenUsage }
  'tool/call': { turn: number; step: number; callId: ToolCallId; name: string; arguments: string }
  'tool/result': {
    turn: number
    step: number
    callId: ToolCallId
    name: string
    message: Message
    error?: { code: string; message: string }
    meta?: JsonValue
  }
  'request/header': { reason: string; provider: string; model: string; reasoningEffort?: string; maxTokens?: number }
  'request/context': { provider: string; model: string; contextWindow?: number }
  'session/end-seed': Record<string, never>
  'llm/retry': { turn: number; step: number; attempt: number; delayMs: number; error: LlmFailure }
  'permission/decision': { callId: ToolCallId; tool: string; preset: string; decision: 'allow' | 'deny' | 'ask'; reason: string; answer?: string }
  'todo/write': { todos: Todo[] }
  'session/title': { title: string; source: 'model' | 'user' }
  'plan/mode': { active: boolean; plan?: string }
  'context/compaction': { reason: 'threshold' | 'overflow' | 'manual'; replaced: number[]; tokensBefore?: number; error?: string }
}

export type KnownEventType = keyof SessionEventMap

export interface SessionEvent<K extends string = string> {
  seq: number
  time: number
  type: K
  data: K extends KnownEventType ? SessionEventMap[K] : unknown
  replaces?: number[]
}

export function isEvent<K extends KnownEventType>(event: SessionEvent, type: K): event is SessionEvent<K> {
  return event.type === type
}

export interface Delta {
  turn: number
  step: number
  kind: 'text' | 'reasoning' | 'tool-arguments'
  index: number
  delta: string
}

// ---- HTTP bodies ----

export interface ApiErrorBody {
  error: { code: string; message: string; details?: Record<string, unknown> }
}

export interface Info {
  version: string
  launchCwd: string
  home: string
  defaultModel: string
  provider: string
  models: string[]
  presets: string[]
  reasoningEfforts: string[]
  /** A token is in use (the server is bound beyond loopback). */
  auth: boolean
  /** USD per million tokens by model, when the server knows them (not in API.md v1; the app has its own table too). */
  prices?: Record<string, ModelPrice>
}

export interface ModelPrice {
  input: number
  cacheRead: number
  output: number
}

export interface SessionSummary {
  sessionId: SessionId
  title?: string
  cwd: string
  createdAt: number
  updatedAt: number
  parentSession?: SessionId
  running: boolean
  snippet?: string
  /** Another dsh process (a terminal run, another server) has the session open: sending to it answers 409 until it lets go. */
  openIn?: { pid: number; host: string; since: number }
}

export interface SessionList {
  sessions: SessionSummary[]
  nextCursor?: string
}

export interface SessionDetail {
  session: {
    sessionId: SessionId
    title?: string
    cwd: string
    createdAt: number
    parentSession?: SessionId
    running: boolean
    model?: string
    reasoningEffort?: string
    permissionPreset: string
    /** The network of the session's sandboxed commands (off, proxy, on), when a permission service runs. */
    network?: string
  }
  /** The whole log, or with `tail` its recent part (whole turns). */
  events: SessionEvent[]
  /** Present when `tail` left earlier events out: `GET /api/sessions/:id/events?before=` reads them. */
  earlier?: EarlierHistory
}

/** What the client needs of the events left out of a recent-history read to show the session as a whole. */
export interface EarlierHistory {
  /** The seq of the first event sent. */
  before: number
  /** The last event of each type that sets session-wide state (model, title, todos, plan mode, preset). */
  state: SessionEvent[]
  /** The token usage of the left-out events, summed per model. */
  usage: Array<{ model?: string; usage: TokenUsage }>
}

export interface NewSession {
  cwd?: string
  model?: string
  reasoningEffort?: string
  permissionPreset?: string
  network?: string
}

export interface ImageAttachment {
  mediaType: string
  /** Base64, without a data: prefix. */
  data: string
}

export interface OutgoingMessage {
  text: string
  images?: ImageAttachment[]
}

export interface SessionPatch {
  title?: string
  model?: string
  reasoningEffort?: string
  permissionPreset?: string
  network?: string
}

export interface QuestionOption {
  label: string
  description?: string
}

export interface Question {
  question: string
  header?: string
  options: QuestionOption[]
  multiSelect?: boolean
}

export interface QuestionAnswer {
  question: string
  selected: string[]
  text?: string
}

export interface DirListing {
  path: string
  parent?: string
  dirs: string[]
}

export type Theme = 'light' | 'dark' | 'system'

export interface Settings {
  provider: string
  baseUrl?: string
  hasKey: boolean
  keySource?: 'env' | 'file' | 'env-file'
  model: string
  reasoningEffort?: string
  permissionPreset: string
  /** The network of sandboxed commands in new sessions; absent: each preset's own default. */
  network?: string
  /** The network settings there are. */
  networks: string[]
  theme: Theme
}

export interface SettingsUpdate {
  apiKey?: string
  baseUrl?: string
  model?: string
  reasoningEffort?: string
  permissionPreset?: string
  network?: string
  theme?: Theme
}

export type ConnectionTest = { ok: true; model: string } | { ok: false; error: { code: string; message: string; status?: number } }

// ---- WebSocket frames ----

export type ClientFrame =
  | { type: 'subscribe'; sessionId: SessionId; afterSeq?: number }
  | { type: 'unsubscribe'; sessionId: SessionId }
  | { type: 'ping' }

export interface ApprovalRequest {
  type: 'approval'
  requestId: RequestId
  sessionId: SessionId
  /** `arguments` is the raw JSON text from the model. */
  toolCall: { callId: ToolCallId; name: string; arguments: string }
  reason: string
  preset: string
}

export interface QuestionRequest {
  type: 'question'
  requestId: RequestId
  sessionId: SessionId
  questions: Question[]
}

export type ServerFrame =
  | { type: 'event'; sessionId: SessionId; event: SessionEvent }
  | { type: 'delta'; sessionId: SessionId; delta: Delta }
  | { type: 'subscribed'; sessionId: SessionId; lastSeq: number; running: boolean }
  | { type: 'status'; sessionId: SessionId; status: 'running' | 'idle' }
  | ApprovalRequest
  | { type: 'approval-resolved'; requestId: RequestId; sessionId: SessionId }
  | QuestionRequest
  | { type: 'question-resolved'; requestId: RequestId; sessionId: SessionId }
  | { type: 'sessions-changed' }
  | { type: 'error'; sessionId?: SessionId; error: { code: string; message: string } }
  | { type: 'pong' }
