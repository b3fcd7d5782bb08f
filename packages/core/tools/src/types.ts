import type { JsonValue } from '@dsh/cordis'
import type { ContentBlock, ToolCallId } from '@dsh/llm'

import type { FileChange, ToolKind, ToolView } from '@dsh/wire-types'
import type { z } from 'zod'

export type {
  DiagnosticSeverity,
  FileChange,
  FileDiagnostic,
  ToolCallPresentation,
  ToolFailure,
  ToolKind,
  ToolResult,
  ToolView,
} from '@dsh/wire-types'

/** One tool call as the model made it. `arguments` is the raw JSON text the model produced. */
export interface ToolCall {
  callId: ToolCallId
  name: string
  arguments: string
}

/** What the caller (the agent loop) supplies for one call. */
export interface ToolRunOptions {
  /** Aborted when the caller cancels the step. */
  signal: AbortSignal
  /** The session workspace; tools resolve relative paths against it. */
  cwd: string
  sessionId: string
  /** Scratch space shared by every tool call of one session (read records, approvals). */
  sessionState: Map<string, unknown>
}

/**
 * What a tool body receives. `signal` is the per-call signal: a child of the
 * caller's signal that the runtime also aborts when the call times out.
 */
export type ToolRunContext = ToolRunOptions & {
  callId: ToolCallId
  toolName: string
  signal: AbortSignal
}

/** What a tool body returns. A string becomes one text block. */
export interface ToolOutput {
  content: string | ContentBlock[]
  isError?: boolean
  /** With `isError`: a machine-readable failure code for hooks and UIs (default `TOOL_FAILED`). */
  code?: string
  meta?: JsonValue
}

/** The failure codes the pipeline itself produces. Tools may add their own through `ToolError` or `ToolOutput.code`. */
export type ToolErrorCode =
  | 'UNKNOWN_TOOL'
  | 'TOOL_NOT_AVAILABLE'
  | 'INVALID_JSON'
  | 'INVALID_ARGUMENTS'
  | 'DENIED'
  | 'TIMEOUT'
  | 'CANCELLED'
  | 'TOOL_ERROR'
  | 'TOOL_FAILED'
  | 'PIPELINE_ERROR'

/** A zod object schema: the only shape tool parameters may take. */
export type ParameterSchema = z.ZodObject

/**
 * A model-facing tool. `parameters` is a zod object schema; the model sees it
 * as JSON Schema and the runtime validates arguments with it before `execute`.
 */
export interface ToolDefinition<S extends ParameterSchema = ParameterSchema> {
  readonly name: string
  readonly description: string
  readonly parameters: S
  /**
   * The JSON Schema the model is shown, sent as is instead of the one derived
   * from `parameters`, for tools whose schema comes from elsewhere (MCP
   * servers). Its root must be `type: "object"`. `parameters` still validates
   * the arguments, so pair it with a schema at least as loose.
   */
  readonly inputSchema?: Record<string, JsonValue>
  /** Per-call budget in milliseconds; the runtime's `defaultTimeoutMs` applies when absent. Never sent to the model. */
  readonly timeoutMs?: number
  /** The tool only observes; it changes nothing. */
  readonly readOnly?: boolean
  /** Only a literal `true` for the validated arguments lets the call run beside others. */
  isConcurrencySafe?(args: z.output<S>): boolean
  /**
   * What the call would touch, for permission presets: reads or writes of
   * paths (as the model gave them, resolved against `run.cwd` by the policy),
   * command execution, network. Tools without it count as `other`.
   */
  access?(args: z.output<S>): ToolAccess
  execute(args: z.output<S>, run: ToolRunContext): ToolOutput | Promise<ToolOutput>
  /** How surfaces show the tool's calls (a title, an ACP kind, the view of its result). Never sent to the model. */
  readonly presentation?: ToolPresentation
}

/** The ACP kind of a tool call: editors pick an icon and grouping from it. */

export const TOOL_KINDS: readonly ToolKind[] = [
  'read',
  'edit',
  'delete',
  'move',
  'search',
  'execute',
  'think',
  'fetch',
  'switch_mode',
  'other',
]

export const TOOL_VIEWS: readonly ToolView[] = ['diff', 'terminal', 'search', 'read', 'web', 'generic']

/**
 * What a tool says about its own presentation. The functions get the call's
 * arguments as the model sent them, parsed but not validated (they may be
 * incomplete or wrong), and must not throw for odd values.
 */
export interface ToolPresentation {
  kind: ToolKind
  view: ToolView
  /** One line saying what the call does: "Read src/a.ts". `shown` renders a path as the user reads it (relative inside the workspace). */
  title?(args: CallArguments, shown: (path: string) => string): string
  /** The paths the call acts on, as given (resolved against the workspace by the caller). */
  locations?(args: CallArguments): string[]
  /** For `diff`: the change the call asks for, shown before it runs (`oldText` null for a new file). */
  change?(args: CallArguments): FileChange | undefined
  /** For `terminal`: the command line the call runs. */
  command?(args: CallArguments): string | undefined
  /** Show the call unfolded by default (the web app unfolds `diff` and `terminal` calls anyway). */
  unfolded?: boolean
}

export type CallArguments = Record<string, unknown>

/**
 * The effect of one call, as its tool declares it. `escalated` marks a
 * request to leave the sandbox (e.g. a command that needs the network).
 */
export interface ToolAccess {
  kind: 'read' | 'write' | 'execute' | 'network' | 'other'
  paths?: string[]
  escalated?: boolean
  /** A short human description for approval prompts, e.g. the command line. */
  summary?: string
  /** For `execute`: the exact command line the call runs (what permission rules such as `bash(npm test*)` match). */
  command?: string
  /** For `network`: the URLs the call reaches (what `domain:` permission rules match). */
  urls?: string[]
}

/** The frozen facts of one validated call, handed to every `tools/*` waterfall. */
export interface ToolExecution {
  readonly call: Readonly<ToolCall>
  readonly tool: ToolDefinition
  /** The validated arguments, deep-frozen. */
  readonly args: Readonly<Record<string, unknown>>
  readonly run: ToolRunContext
  /** Set when a `rewrite` replaced the model's arguments: what the model sent. */
  readonly rewrittenFrom?: Readonly<Record<string, unknown>>
}

/**
 * What `tools/pre-execute` decides. An `ask` may name its `scope`: what an
 * "allow for this session" answer covers (default: the tool and the reason).
 * A `rewrite` replaces the call's arguments (a hook's updated input) once:
 * they are validated again and the whole pre-execute pipeline, the
 * permission check included, runs again on them before anything runs.
 */
export type PreToolDecision =
  | { kind: 'allow' }
  | { kind: 'deny'; reason: string }
  | { kind: 'ask'; reason: string; scope?: string }
  | { kind: 'rewrite'; arguments: Record<string, unknown>; reason: string }

/** One call that needs the user's approval, as the approval broker receives it. */
export interface ApprovalRequest {
  call: Readonly<ToolCall>
  /** Why the call needs approval, shown to the user. */
  reason: string
  /** What an "allow for this session" answer covers: a later request of the same session and scope is not asked. */
  scope: string
  run: ToolRunContext
}

/**
 * What came of an approval request: allowed (asked now, or `remembered` from
 * an earlier "allow for this session"), or not, and why. `message` is what
 * the user said with a rejection, or what kept the request from being answered.
 */
export type ApprovalVerdict =
  | { allowed: true; answer: 'allow-once' | 'allow-session' | 'remembered' }
  | { allowed: false; answer: 'reject'; message?: string }
  | { allowed: false; answer: 'no-approver' | 'failed' | 'cancelled'; message: string }

/**
 * The one place approvals are decided (the conversation service provides it):
 * it asks the surface's user, interprets the answer and remembers what was
 * allowed for a session.
 */
export interface ApprovalBroker {
  /** Asks (or recalls) and answers; never throws. */
  approve(request: ApprovalRequest, signal: AbortSignal): Promise<ApprovalVerdict>
  /** Whether a user could be asked about calls of this session now. */
  canAsk(sessionId: string): boolean
  /** Forgets what was allowed for the session (only the scopes starting with `scopePrefix`, when given). */
  forget(sessionId: string, scopePrefix?: string): void
}

/** A thrown `ToolError` becomes an error result with its own code and message. */
export class ToolError extends Error {
  override name = 'ToolError'

  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message)
  }
}
