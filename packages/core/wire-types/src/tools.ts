import type { JsonValue } from './json.ts'
import type { ContentBlock } from './messages.ts'

export interface ToolFailure {
  code: string
  message: string
}

/**
 * The outcome of one tool call, always produced, never thrown. A
 * `tool/result` event carries it as a user message holding one tool-result
 * block, plus `error` and `meta`.
 */
export interface ToolResult {
  content: ContentBlock[]
  isError: boolean
  error?: ToolFailure
  meta?: JsonValue
}

/** What a user answers to a request to run a tool outside the session's permission preset. */
export type ApprovalDecision = 'allow-once' | 'allow-session' | 'reject'

/** What the approver answered, as logged; `no-approver` when nobody could be asked. */
export type PermissionAnswer = ApprovalDecision | 'no-approver'

/**
 * How far tools may reach without asking: `read-only`, `workspace-write`
 * (also writes inside the workspace), `danger-full-access` (everything).
 * `@dsh/permission` enforces them.
 */
export type PermissionPreset = 'read-only' | 'workspace-write' | 'danger-full-access'
