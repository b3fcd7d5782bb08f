/**
 * The JSON shapes of the dsh web API (packages/host/web-server/API.md), as
 * the browser sees them. Messages, events, questions and usage are the
 * server's own types from `@dsh/wire-types` (dependency-free, so the DOM
 * build takes them); the request and response bodies of the API are here.
 */

import type {
  Branded,
  Delta,
  EarlierHistory,
  Question,
  SessionEvent,
  SessionEventMap,
  SessionId,
  ToolCallId,
  ToolCallPresentation,
  UsageReport,
} from '@dsh/wire-types'

export type {
  ApprovalDecision,
  Branded,
  CommandInfo,
  ContentBlock,
  ContextUse,
  Delta,
  DiagnosticSeverity,
  EarlierHistory,
  FileDiagnostic,
  JobStatus,
  JsonValue,
  LlmFailure,
  Message,
  MessageSource,
  OutputTail,
  PermissionPreset,
  Question,
  QuestionAnswer,
  QuestionOption,
  SessionEvent,
  SessionActivity,
  SessionEventMap,
  SessionId,
  TerminalStatus,
  Todo,
  TodoStatus,
  TokenUsage,
  ToolCallId,
  ToolCallPresentation,
  TurnUsage,
  UsageReport,
} from '@dsh/wire-types'

export type RequestId = Branded<string, 'RequestId'>

export type KnownEventType = keyof SessionEventMap & string

export function isEvent<K extends KnownEventType>(event: SessionEvent, type: K): event is SessionEvent<K> {
  return event.type === type
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
    /** Plan mode: the session may read and plan, not change files. */
    plan?: boolean
    /** The session a fork or rewind copied. */
    forkedFrom?: SessionId
  }
  /** The whole log, or with `tail` its recent part (whole turns). */
  events: SessionEvent[]
  /** Present when `tail` left earlier events out: `GET /api/sessions/:id/events?before=` reads them. */
  earlier?: EarlierHistory
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
  planMode?: boolean
}

export interface RewindRequest {
  /** A user message id, or its number among the prompts (1 = first). */
  to: string
  restoreFiles?: boolean
  dryRun?: boolean
  force?: boolean
}

export interface RewindResult {
  /** The new session (absent on a dry run). */
  sessionId?: SessionId
  messageId: string
  turn: number
  checkpoint?: string
  changes: Array<{ path: string; change: 'modified' | 'added' | 'deleted' }>
  /** Files changed outside dsh since the snapshot: restored only with `force`. */
  conflicts: string[]
  restored: boolean
  backup?: string
}

export interface DirListing {
  path: string
  parent?: string
  dirs: string[]
}

export type Theme = 'light' | 'dark' | 'system'

export interface Settings {
  provider: string
  /** The model routes the server serves (`deepseek`, `openai-compatible`, ...). */
  routes: string[]
  /** The OpenAI-compatible server: its saved address, and whether a key is set (never the key). */
  compatible: { baseUrl?: string; hasKey: boolean; keySource?: 'env' | 'file' | 'env-file' }
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
  /** Permission rules: the profile config's (read-only here) and the settings file's (editable). */
  rules: { config: PermissionRuleLists; settings: PermissionRuleLists }
}

export interface PermissionRuleLists {
  allow: string[]
  deny: string[]
}

export interface SettingsUpdate {
  apiKey?: string
  baseUrl?: string
  /** The route new sessions use. */
  provider?: string
  compatibleApiKey?: string
  compatibleBaseUrl?: string
  /** The settings file's rules, replacing its lists (one rule per entry, e.g. `bash(npm test*)`). */
  allowRules?: string[]
  denyRules?: string[]
  model?: string
  reasoningEffort?: string
  permissionPreset?: string
  network?: string
  theme?: Theme
}

/** What a route's server lists at `/models` (with the saved address and key). */
export type ModelDiscovery =
  | { ok: true; route: string; models: string[] }
  | { ok: false; route: string; error: { code: string; message: string } }

export type ConnectionTest =
  | { ok: true; model: string }
  | { ok: false; error: { code: string; message: string; status?: number } }

// ---- WebSocket frames ----

export type ClientFrame =
  | { type: 'subscribe'; sessionId: SessionId; afterSeq?: number }
  | { type: 'unsubscribe'; sessionId: SessionId }
  | { type: 'ping' }

export interface ApprovalRequest {
  type: 'approval'
  requestId: RequestId
  sessionId: SessionId
  /** `arguments` is the raw JSON text from the model; `presentation` how the tool shows the call. */
  toolCall: { callId: ToolCallId; name: string; arguments: string; presentation?: ToolCallPresentation }
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
  /** Tokens, cost and context use of the whole session: after `subscribed`, and after each turn ends. */
  | { type: 'usage'; sessionId: SessionId; report: UsageReport }
  | ApprovalRequest
  | { type: 'approval-resolved'; requestId: RequestId; sessionId: SessionId }
  | QuestionRequest
  | { type: 'question-resolved'; requestId: RequestId; sessionId: SessionId }
  | { type: 'sessions-changed' }
  | { type: 'error'; sessionId?: SessionId; error: { code: string; message: string } }
  | { type: 'pong' }
