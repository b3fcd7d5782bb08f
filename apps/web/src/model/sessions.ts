import type { DshApi, SessionSummary } from '@dsh/web-client'
import { Store } from '../lib/store.ts'
import type { Toasts } from './toasts.ts'

export interface SessionsView {
  query: string
  sessions: readonly SessionSummary[]
  loading: boolean
  error?: string
}

const SEARCH_DELAY_MS = 200
const LIMIT = 200

/** The sidebar's session list: the server's catalog, or its full-text search results. */
export class SessionsStore extends Store<SessionsView> {
  private searchTimer: ReturnType<typeof setTimeout> | undefined
  private generation = 0

  constructor(
    private readonly api: DshApi,
    private readonly toasts: Toasts,
  ) {
    super({ query: '', sessions: [], loading: true })
  }

  search(query: string): void {
    this.set((view) => ({ ...view, query }))
    clearTimeout(this.searchTimer)
    this.searchTimer = setTimeout(() => void this.refresh(), SEARCH_DELAY_MS)
  }

  async refresh(): Promise<void> {
    const generation = ++this.generation
    const query = this.get().query.trim()
    this.set((view) => ({ ...view, loading: true }))
    try {
      const { sessions } = await this.api.listSessions(query ? { query, limit: LIMIT } : { limit: LIMIT })
      if (generation === this.generation) this.set((view) => ({ query: view.query, sessions, loading: false }))
    } catch (error) {
      if (generation !== this.generation) return
      this.set((view) => ({ ...view, loading: false, error: error instanceof Error ? error.message : String(error) }))
    }
  }

  /** Marks a session running or idle in the list without a round trip. */
  setRunning(sessionId: string, running: boolean): void {
    this.set((view) => {
      const index = view.sessions.findIndex((s) => s.sessionId === sessionId)
      if (index < 0 || view.sessions[index]?.running === running) return view
      const sessions = view.sessions.slice()
      sessions[index] = { ...(sessions[index] as SessionSummary), running }
      return { ...view, sessions }
    })
  }

  reportError(error: unknown, doing: string): void {
    this.toasts.error(error, doing)
  }
}
