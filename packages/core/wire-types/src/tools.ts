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

export type DiagnosticSeverity = 'error' | 'warning' | 'information' | 'hint'

/**
 * One finding of a language server about a file, 1-based (`character` in
 * UTF-16 units). A tool result whose call changed files may carry the new
 * ones as `meta.diagnostics: FileDiagnostic[]` (added by `@dsh/lsp-diagnostics`);
 * surfaces show them with the call.
 */
export interface FileDiagnostic {
  /** Absolute path. */
  path: string
  line: number
  character: number
  severity: DiagnosticSeverity
  message: string
  /** The server's code for it, e.g. `TS2322` or `reportAttributeAccessIssue`. */
  code?: string
  /** Who reported it, e.g. `typescript` or `Pyright`. */
  source?: string
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

/** What a tool call does, in ACP's terms (`switch_mode` included). */
export type ToolKind =
  | 'read'
  | 'edit'
  | 'delete'
  | 'move'
  | 'search'
  | 'execute'
  | 'think'
  | 'fetch'
  | 'switch_mode'
  | 'other'

/**
 * How a call's result is shown: `diff` (a file change), `terminal` (a
 * command's output), `search`, `read`, `web`; `generic` the arguments and
 * the result as text.
 */
export type ToolView = 'diff' | 'terminal' | 'search' | 'read' | 'web' | 'generic'

/** A change to one file, shown before the call runs (`oldText` null for a new file). */
export interface FileChange {
  path: string
  oldText: string | null
  newText: string
}

/**
 * How a tool shows one call, as its own presentation says (`@dsh/tools`):
 * what surfaces render. Locations are absolute paths. Surfaces add it on the
 * way out; it is never in the log.
 */
export interface ToolCallPresentation {
  title: string
  kind: ToolKind
  view: ToolView
  locations: string[]
  change?: FileChange
  command?: string
  unfolded: boolean
}
