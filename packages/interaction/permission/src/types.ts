import type { ToolCallId } from '@dsh/llm'

/**
 * How far tools may reach without asking.
 *
 * - `read-only`: reads anywhere; no writes, no escalated commands, nothing
 *   undeclared. Commands still run, confined read-only by the sandbox.
 * - `workspace-write`: also writes inside the session's workspace (its cwd),
 *   the temp dir and any extra writable roots, except the workspace's `.git`.
 * - `danger-full-access`: everything; commands run unconfined.
 */
export type PermissionPreset = 'read-only' | 'workspace-write' | 'danger-full-access'

export const PRESETS: readonly PermissionPreset[] = ['read-only', 'workspace-write', 'danger-full-access']

/** What happens to a call outside the preset: `ask` the surface's approver, or deny it (`never`). */
export type ApprovalPolicy = 'ask' | 'never'

/** The confinement a command runs under; `@dsh/sandbox` defines it and enforces it. */
export type { SandboxPolicy } from '@dsh/sandbox'

/** What the approver answered, as logged; `no-approver` when nobody could be asked. */
export type PermissionAnswer = 'allow-once' | 'allow-session' | 'reject' | 'no-approver'

/**
 * The data of a `permission/decision` session event: one per call outside
 * the preset (calls the preset allows are not logged).
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
}

/**
 * The data of a `permission/preset` session event: the session's preset was
 * set by a surface (a mode switch, a setting), or reset to the configured one
 * (`null`). The last one is the session's preset again after resume or fork.
 */
export interface PermissionPresetEvent {
  preset: PermissionPreset | null
}

declare module '@dsh/session' {
  interface SessionEventMap {
    /** A tool call outside the permission preset, and what became of it. Log only, never model-visible. */
    'permission/decision': PermissionDecisionEvent
    /** The session's own preset. Log only, never model-visible. */
    'permission/preset': PermissionPresetEvent
  }
}
