import path from 'node:path'
import type * as Wire from '@dsh/wire-types'
import { z } from 'zod'
import { sessionIdProblem } from './session-id.ts'

/** A string that can name a session (`sessionIdProblem`). */
export const sessionId = z.string().superRefine((id, context) => {
  const problem = sessionIdProblem(id)
  if (problem) context.addIssue({ code: 'custom', message: problem })
})
const absolutePath = z.string().refine((p) => path.isAbsolute(p), 'must be an absolute path')
const presets = z.enum([
  'read-only',
  'workspace-write',
  'danger-full-access',
]) satisfies z.ZodType<Wire.PermissionPreset>
/** The network of a session's sandboxed commands (`@dsh/sandbox`'s NETWORK_MODES). */
const networkModes = z.enum(['off', 'proxy', 'on'])
/** `@dsh/llm`'s REASONING_EFFORTS. */
const efforts = z.enum(['off', 'low', 'high', 'max']) satisfies z.ZodType<Wire.ReasoningEffort>
const empty = z.object({})

// ---- shared shapes ----

/** What an image in a prompt may be, on every surface (ACP's prompt checks use these too). */
export const ImageMediaType = z.enum(['image/png', 'image/jpeg', 'image/gif', 'image/webp'])
export const ImageData = z.base64('must be base64')

/** One block of a prompt: text, or an image as base64. */
export const PromptBlock = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text'), text: z.string() }),
  z.object({ type: z.literal('image'), mediaType: ImageMediaType, data: ImageData }),
])

/** A prompt: plain text or a non-empty list of blocks. */
export const PromptContent = z.union([z.string(), z.array(PromptBlock).min(1, 'must hold at least one block')], {
  error: 'must be a string or a list of content blocks ({type: "text", text} or {type: "image", mediaType, data})',
})

/** A session log event as it travels (see `@dsh/session`); consumers must tolerate types they do not know. */
export const WireEvent = z.object({
  seq: z.number(),
  time: z.number(),
  type: z.string(),
  data: z.unknown(),
  ignorable: z.literal(true).optional(),
  replaces: z.array(z.number()).optional(),
})

export const Usage = z.object({
  inputTokens: z.number(),
  outputTokens: z.number(),
  cacheReadTokens: z.number(),
  reasoningTokens: z.number(),
}) satisfies z.ZodType<Required<Wire.TokenUsage>>

/** USD per million tokens. */
export const ModelPrice = z.object({
  input: z.number(),
  cacheRead: z.number(),
  output: z.number(),
}) satisfies z.ZodType<Wire.ModelPrice>

export const ModelSummary = z.object({
  provider: z.string(),
  id: z.string(),
  contextWindow: z.number().optional(),
  maxOutputTokens: z.number().optional(),
  images: z.boolean().optional(),
  price: ModelPrice.optional(),
})

export const ContextUse = z.object({
  tokens: z.number(),
  window: z.number(),
  percent: z.number(),
}) satisfies z.ZodType<Wire.ContextUse>

export const TurnUsage = z.object({
  turn: z.number(),
  model: z.string().optional(),
  usage: Usage,
  costUsd: z.number().optional(),
  durationMs: z.number().optional(),
  steps: z.number(),
}) satisfies z.ZodType<Wire.TurnUsage>

/** Tokens, cost (when the models are priced) and context use of a session. */
export const UsageReport = z.object({
  usage: Usage,
  costUsd: z.number().optional(),
  unpriced: z.array(z.string()).optional(),
  turns: z.array(TurnUsage),
  context: ContextUse.optional(),
}) satisfies z.ZodType<Wire.UsageReport>

export const SessionSummary = z.object({
  sessionId: z.string(),
  title: z.string().nullable(),
  cwd: z.string(),
  createdAt: z.number(),
  updatedAt: z.number(),
  /** The session that started this one (a subagent's parent). */
  parentSession: z.string().optional(),
  /** The session this one was forked from. */
  forkedFrom: z.string().optional(),
})

export const StopReason = z.enum(['completed', 'cancelled', 'error', 'max-tokens'])

// ---- client → server methods ----

export const InitializeParams = z.object({
  protocolVersion: z.number(),
  clientInfo: z.object({ name: z.string(), version: z.string().optional() }).optional(),
  capabilities: z.object({ approvals: z.boolean().optional(), questions: z.boolean().optional() }).optional(),
})
export const InitializeResult = z.object({
  protocolVersion: z.number(),
  serverInfo: z.object({ name: z.string(), version: z.string() }),
  models: z.array(ModelSummary),
  defaultModel: z.string(),
  /** What the server will actually ask the client for (declared by the client and supported by this profile). */
  capabilities: z.object({ approvals: z.boolean(), questions: z.boolean() }),
})

export const SessionNewParams = z.object({
  cwd: absolutePath,
  model: z.string().min(1).optional(),
  permissionPreset: presets.optional(),
  network: networkModes.optional(),
})
export const SessionIdResult = z.object({ sessionId: z.string() })
export const SessionResumeParams = z.object({ sessionId })
export const SessionResumeResult = SessionIdResult.extend({ problems: z.array(z.string()).optional() })
export const SessionForkParams = z.object({ sessionId, turn: z.number().int().min(1).optional() })
export const SessionListParams = z.object({
  cwd: absolutePath.optional(),
  query: z.string().optional(),
  limit: z.number().int().min(1).optional(),
  cursor: z.string().optional(),
  /** Also list sessions that have a parent (subagent sessions). Default false. */
  includeChildren: z.boolean().optional(),
})
export const SessionListResult = z.object({ sessions: z.array(SessionSummary), nextCursor: z.string().optional() })
export const SessionPromptParams = z.object({ sessionId, content: PromptContent })
export const PromptResult = z.object({
  stopReason: StopReason,
  text: z.string(),
  usage: Usage,
  /** The turn's cost in USD, when its models are priced. */
  costUsd: z.number().optional(),
  durationMs: z.number().optional(),
  /** Model requests the turn made. */
  steps: z.number().optional(),
  /** How full the context window is after the turn. */
  context: ContextUse.optional(),
  turn: z.number().optional(),
  error: z.object({ code: z.string(), message: z.string() }).optional(),
})
export const SessionConfigureParams = z.object({
  sessionId,
  /** A model one of the server's routes offers (`initialize`'s `models`). */
  model: z.string().min(1).optional(),
  reasoningEffort: efforts.optional(),
  preset: presets.optional(),
  network: networkModes.optional(),
  /** Plan mode on or off: while on, only read-only tools run until the user approves a plan. */
  planMode: z.boolean().optional(),
})
/** A session's settings after `session/configure` (what its next request uses). */
export const SessionSettings = z.object({
  model: z.string(),
  reasoningEffort: efforts.optional(),
  preset: presets.optional(),
  network: networkModes.optional(),
  planMode: z.boolean(),
})
export const SessionRefParams = z.object({ sessionId })
export const CommandSummary = z.object({
  name: z.string(),
  description: z.string(),
  argumentHint: z.string().optional(),
  /** Where it comes from: `project`, `user`, `project:<subfolder>`, `skill`. */
  scope: z.string(),
})
/** Commands callable as `/name args` in a session's `session/prompt` text. */
export const SessionCommandsResult = z.object({ commands: z.array(CommandSummary) })
export const SessionRewindParams = z.object({
  sessionId,
  /** The user message to go back to: its id, or its number among the session's prompts (1 = the first). */
  to: z.string().min(1),
  /** Put the workspace's files back as they were before that message. */
  restoreFiles: z.boolean().optional(),
  /** Only report what would change. */
  dryRun: z.boolean().optional(),
  /** Overwrite files that changed outside dsh since the snapshot. */
  force: z.boolean().optional(),
})
export const SessionRewindResult = z.object({
  /** The fork, holding the conversation before the message (absent on a dry run). */
  sessionId: z.string().optional(),
  messageId: z.string(),
  turn: z.number(),
  checkpoint: z.string().optional(),
  /** How each file differs now from the snapshot; a restore undoes these. */
  changes: z.array(z.object({ path: z.string(), change: z.enum(['modified', 'added', 'deleted']) })),
  /** Changed files that were edited outside dsh since the snapshot. */
  conflicts: z.array(z.string()),
  restored: z.boolean(),
  backup: z.string().optional(),
})
export const SessionEventsParams = z.object({ sessionId, afterSeq: z.number().int().min(-1).optional() })
export const SessionEventsResult = z.object({ events: z.array(WireEvent) })

/** Every method a client may call: its params and its result. */
export const ClientMethods = {
  initialize: { params: InitializeParams, result: InitializeResult },
  'session/new': { params: SessionNewParams, result: SessionIdResult },
  'session/resume': { params: SessionResumeParams, result: SessionResumeResult },
  'session/fork': { params: SessionForkParams, result: SessionIdResult },
  'session/list': { params: SessionListParams, result: SessionListResult },
  'session/prompt': { params: SessionPromptParams, result: PromptResult },
  'session/configure': { params: SessionConfigureParams, result: SessionSettings },
  // A steer takes what a prompt takes; it is delivered at the next step of the running turn.
  'session/steer': { params: SessionPromptParams, result: empty },
  'session/cancel': { params: SessionRefParams, result: empty },
  'session/events': { params: SessionEventsParams, result: SessionEventsResult },
  'session/usage': { params: SessionRefParams, result: UsageReport },
  'session/close': { params: SessionRefParams, result: empty },
  'session/commands': { params: SessionRefParams, result: SessionCommandsResult },
  'session/rewind': { params: SessionRewindParams, result: SessionRewindResult },
  shutdown: { params: empty, result: empty },
} as const

// ---- server → client notifications ----

export const SessionEventNotification = z.object({ sessionId: z.string(), event: WireEvent })
export const SessionDeltaNotification = z.object({
  sessionId: z.string(),
  turn: z.number(),
  step: z.number(),
  index: z.number(),
  kind: z.enum(['text', 'reasoning', 'tool-arguments']),
  delta: z.string(),
}) satisfies z.ZodType<Wire.Delta & { sessionId: string }>
export const SessionStatusNotification = z.object({ sessionId: z.string(), status: z.enum(['running', 'idle']) })
/** A `session/prompt` (its request `id`) waits for the session's running work: `position` 1 runs next. */
export const SessionQueuedNotification = z.object({
  sessionId: z.string(),
  id: z.union([z.string(), z.number()]),
  position: z.number().int().min(1),
})

export const ServerNotifications = {
  'session/event': SessionEventNotification,
  'session/delta': SessionDeltaNotification,
  'session/status': SessionStatusNotification,
  'session/queued': SessionQueuedNotification,
} as const

// ---- server → client requests ----

export const ApprovalRequestParams = z.object({
  sessionId: z.string(),
  toolCall: z.object({ callId: z.string(), name: z.string(), arguments: z.string() }),
  /** The session's permission preset, or null when the profile has no permission service. */
  preset: z.string().nullable(),
  reason: z.string(),
})
export const ApprovalResult = z.object({
  decision: z.enum(['allow-once', 'allow-session', 'reject']) satisfies z.ZodType<Wire.ApprovalDecision>,
  message: z.string().optional(),
})

export const Question = z.object({
  id: z.string().optional(),
  question: z.string(),
  header: z.string().optional(),
  options: z.array(z.object({ label: z.string(), description: z.string().optional() })),
  multiSelect: z.boolean().optional(),
}) satisfies z.ZodType<Wire.Question>
export const QuestionAnswer = z.object({
  question: z.string(),
  selected: z.array(z.string()),
  text: z.string().optional(),
}) satisfies z.ZodType<Wire.QuestionAnswer>
export const QuestionAskParams = z.object({ sessionId: z.string(), callId: z.string(), questions: z.array(Question) })
export const QuestionAskResult = z.object({ answers: z.array(QuestionAnswer) })

export const ServerRequests = {
  'approval/request': { params: ApprovalRequestParams, result: ApprovalResult },
  'question/ask': { params: QuestionAskParams, result: QuestionAskResult },
} as const

/** Either side, params `{id}`: the request with this id is no longer wanted. */
export const CANCEL_REQUEST = '$/cancelRequest'
