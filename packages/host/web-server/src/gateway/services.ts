import type { Agent } from '@dsh/agent'
import type { Context } from '@dsh/cordis'
import type { Session } from '@dsh/session'

// The optional services the API uses when their plugins are loaded. Only the
// members used here are described, so this package does not depend on them.

export interface CatalogEntry {
  sessionId: string
  title?: string
  cwd: string
  createdAt: number
  updatedAt: number
  parentSession?: string
}

export interface SessionCatalogLike {
  list(q?: { cwd?: string; query?: string; limit?: number; cursor?: string; includeChildren?: boolean }): Promise<{ sessions: CatalogEntry[]; nextCursor?: string }>
  remove(id: string): Promise<void>
}

export interface CompactionLike {
  compact(agent: Agent, options?: { reason?: 'manual' }): Promise<{ compacted: boolean; replaced: number; error?: string }>
}

export interface SessionTitlesLike {
  rename(session: Session, title: string): void
}

export interface Question {
  question: string
  header?: string
  options: Array<{ label: string; description?: string }>
  multiSelect?: boolean
}

export interface QuestionAnswer {
  question: string
  selected: string[]
  text?: string
}

export interface QuestionRequest {
  sessionId: string
  callId: string
  questions: Question[]
}

export type Asker = (request: QuestionRequest, signal: AbortSignal) => Promise<QuestionAnswer[]>

export interface QuestionsLike {
  setAsker(ctx: Context, asker: Asker): () => void
}

interface OptionalServices {
  sessionCatalog: SessionCatalogLike
  compaction: CompactionLike
  sessionTitles: SessionTitlesLike
  questions: QuestionsLike
}

/** An optional service by name, or undefined when its plugin is not loaded. */
export function optional<K extends keyof OptionalServices>(ctx: Context, name: K): OptionalServices[K] | undefined {
  return (ctx.get as (name: string) => unknown)(name) as OptionalServices[K] | undefined
}
