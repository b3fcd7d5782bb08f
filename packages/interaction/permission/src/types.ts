import type { ToolCallId } from '@dsh/llm'
import type { NetworkDecision, NetworkMode } from '@dsh/sandbox'

/**
 * How far tools may reach without asking.
 *
 * - `read-only`: reads anywhere; no writes, no escalated commands, nothing
 *   undeclared. Commands still run, confined read-only by the sandbox.
 * - `workspace-write`: also writes inside the session's workspace (its cwd),
 *   the session's temp folder and any extra writable roots, except their
 *   protected paths (`.git`, `.dsh`, `.claude`, `.codex`, `.agents`, `.mcp.json`).
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

/** The data of a `permission/network` session event: the session's own network setting, or back to its preset's (`null`). */
export interface PermissionNetworkEvent {
  network: NetworkMode | null
}

/**
 * The data of a `network/decision` session event: the network proxy let a
 * sandboxed command reach a host, or refused it (logged once per command, host and outcome).
 */
export interface NetworkDecisionEvent extends NetworkDecision {
  /** The command's tool call, when known. */
  callId?: ToolCallId
}

declare module '@dsh/session' {
  interface SessionEventMap {
    /** The session's own network setting. Log only, never model-visible. */
    'permission/network': PermissionNetworkEvent
    /** What the network proxy did for a sandboxed command. Log only, never model-visible. */
    'network/decision': NetworkDecisionEvent
    /** A tool call outside the permission preset, and what became of it. Log only, never model-visible. */
    'permission/decision': PermissionDecisionEvent
    /** The session's own preset. Log only, never model-visible. */
    'permission/preset': PermissionPresetEvent
  }
}
