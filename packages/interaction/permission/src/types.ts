import type { ToolCallId } from '@dsh/llm'
import type { NetworkDecision, NetworkMode } from '@dsh/sandbox'
import type { PermissionPreset } from '@dsh/wire-types'

/** The preset names, answers and the `permission/decision` and `permission/preset` events are wire types. */
export type {
  PermissionAnswer,
  PermissionDecisionEvent,
  PermissionPreset,
  PermissionPresetEvent,
} from '@dsh/wire-types'

/**
 * The presets: how far tools may reach without asking.
 *
 * - `read-only`: reads anywhere; no writes, no escalated commands, nothing
 *   undeclared. Commands still run, confined read-only by the sandbox.
 * - `workspace-write`: also writes inside the session's workspace (its cwd),
 *   the session's temp folder and any extra writable roots, except their
 *   protected paths (`.git`, `.dsh`, `.claude`, `.codex`, `.agents`, `.mcp.json`).
 * - `danger-full-access`: everything; commands run unconfined.
 */
export const PRESETS: readonly PermissionPreset[] = ['read-only', 'workspace-write', 'danger-full-access']

/** What happens to a call outside the preset: `ask` the surface's approver, or deny it (`never`). */
export type ApprovalPolicy = 'ask' | 'never'

/** The confinement a command runs under; `@dsh/sandbox` defines it and enforces it. */
export type { SandboxPolicy } from '@dsh/sandbox'

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
  }
}
