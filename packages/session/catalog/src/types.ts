/** One session as the catalog knows it. */
export interface CatalogEntry {
  sessionId: string
  title?: string
  /** The start of the first user prompt, for lists of sessions without a title. */
  preview?: string
  cwd: string
  createdAt: number
  /** Time of the last event, epoch milliseconds. */
  updatedAt: number
  parentSession?: string
  userMessages: number
  assistantMessages: number
  /** Prompt tokens that missed the provider's cache, summed from each event's `eventUsage`. */
  inputTokens: number
  outputTokens: number
}

export interface ListQuery {
  /** Only sessions started in this folder. */
  cwd?: string
  /** Only sessions whose title, id or folder contains this text, or whose text holds every word. */
  query?: string
  limit?: number
  /** `nextCursor` of the previous page. */
  cursor?: string
  /** Also list subagent sessions (those with a parent). */
  includeChildren?: boolean
}

export interface ListPage {
  sessions: CatalogEntry[]
  nextCursor?: string
}

export interface SearchOptions {
  cwd?: string
  limit?: number
}

export type SearchHit = CatalogEntry & {
  /** A fragment around the best match, the matched words wrapped in the configured markers. */
  snippet: string
}
