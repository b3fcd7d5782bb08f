import type { JsonValue } from '@dsh/cordis'
import type { SessionId } from '@dsh/wire-types'

/**
 * The event vocabulary lives in `@dsh/wire-types` (dependency-free, so the
 * browser app reads the same types). Plugins add their own event types by
 * declaration merging on this module, which reaches the interface there:
 *
 *   declare module '@dsh/session' { interface SessionEventMap { 'my/event': { n: number } } }
 */
export type {
  AnySessionEvent,
  CancelCause,
  SessionEvent,
  SessionEventMap,
  SessionEventType,
  SessionId,
  TurnEndReason,
} from '@dsh/wire-types'

/** A compact record of how a reply streamed: `[msSinceStart, chunk]` pairs. */
export type StreamRecord = [number, JsonValue][]

/** Event types whose message is part of the model's history. */
export const SURFACE_TYPES = ['system/message', 'user/message', 'assistant/message', 'tool/result'] as const
export type SurfaceEventType = (typeof SURFACE_TYPES)[number]

/** Facts about a session kept outside the event log; never model-visible. */
export interface SessionMeta {
  id: SessionId
  createdAt: number
  cwd: string
  parentSession?: SessionId
  /** The session this one was forked from (a fork is not a subagent: it has no parent). */
  forkedFrom?: SessionId
  /** Number of events inherited from the parent (fork) or a previous run (resume). */
  seedLength?: number
  title?: string
}
