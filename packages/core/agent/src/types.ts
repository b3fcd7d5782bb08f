import type { Context } from '@dsh/cordis'
import type { LlmFailure, Message, ReasoningEffort } from '@dsh/llm'
import type { CancelCause, Session, SessionId, TurnEndReason } from '@dsh/session'

/** The model settings an agent's requests start from. */
export interface AgentOptions {
  provider: string
  model: string
  reasoningEffort?: ReasoningEffort
  maxTokens?: number
  /** Model calls one turn may make before it ends with an error; the driver's own limit when absent. */
  maxSteps?: number
}

export type AgentStatus = 'idle' | 'running'

/** How a message joins the agent: its own turn, at the next step, or with the next wake. */
export type Delivery = 'followup' | 'steer' | 'inject'

/**
 * A running conversation over one session. Messages queue in an inbox:
 * `followup` starts its own turn, `steer` joins the running turn at the next
 * step (or starts one), `inject` waits silently for the next step.
 */
export interface Agent {
  readonly id: SessionId
  readonly session: Session
  readonly ctx: Context
  readonly status: AgentStatus
  options: AgentOptions
  send(message: Message, delivery: Delivery): void
  followup(text: string | Message): void
  steer(text: string | Message): void
  inject(message: Message): void
  /** Stops the running turn (mid-stream or mid-tool) and clears queued input. Idle: does nothing. */
  cancel(cause?: CancelCause): void
  /** Resolves when nothing is running or queued. */
  whenIdle(): Promise<void>
  /** Stops the driver for good; resolves when it has drained. */
  stop(): Promise<void>
}

/** The live stream of a reply, for surfaces (a wire type); the durable record is the session log. */
export type { Delta as AgentDelta } from '@dsh/wire-types'

export type PreStepDecision = { kind: 'enter' } | { kind: 'reject' }
export type RequestErrorDecision = { kind: 'retry'; delayMs: number } | undefined

export interface StepInfo {
  turn: number
  step: number
  signal: AbortSignal
}

export interface RequestConfig extends AgentOptions {}

export interface TurnOutcome {
  turn: number
  reason: TurnEndReason
  error?: LlmFailure
}

export interface CreateAgentOptions {
  cwd: string
  options?: Partial<AgentOptions>
  sessionId?: SessionId
  parentSession?: SessionId
  title?: string
  /**
   * Default true: `create` returns once the session's log exists on disk, so
   * its id may be announced at once. false: it returns at once and the log is
   * stored with the first turn's input, for a surface that announces the
   * session only through its published events (headless).
   */
  waitForLog?: boolean
}

/** Builds the driver of an agent; the agent loop registers the one factory. */
export type AgentFactory = (ctx: Context, session: Session, options: AgentOptions) => Agent

/**
 * Thrown by an `agent/user-message` listener to refuse a user's message (a
 * UserPromptSubmit hook): the message is not logged and never reaches the
 * model, and the turn ends with a `BLOCKED` error whose message is `reason`,
 * which the surface shows to the user.
 */
export class MessageBlocked extends Error {
  override name = 'MessageBlocked'
  readonly code = 'BLOCKED'
}
