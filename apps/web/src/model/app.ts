import {
  type ConnectionState,
  DshApi,
  type Info,
  LiveConnection,
  type SessionDetail,
  type SessionId,
} from '@dsh/web-client'
import { takeEarlyLoad } from '../lib/early-load.ts'
import { readRecent } from '../lib/recent-history.ts'
import { Store } from '../lib/store.ts'
import { RequestsStore } from './requests.ts'
import { SessionsStore } from './sessions.ts'
import { SettingsStore } from './settings.ts'
import { Toasts } from './toasts.ts'

/** Everything the components share: the API, the live socket and the stores built on them. */
export class AppModel {
  readonly api: DshApi
  readonly live: LiveConnection
  readonly toasts = new Toasts()
  readonly info = new Store<Info | undefined>(undefined)
  readonly connection: Store<ConnectionState>
  readonly sessions: SessionsStore
  readonly requests: RequestsStore
  readonly settings: SettingsStore
  /** The sidebar drawer on narrow screens (and at high zoom). */
  readonly sidebarOpen = new Store(false)
  private listRefresh: ReturnType<typeof setTimeout> | undefined
  private prefetched = new Map<SessionId, SessionDetail | Promise<SessionDetail>>()

  constructor(token: string | undefined) {
    this.api = new DshApi(token ? { token } : {})
    this.live = new LiveConnection(token ? { token } : {})
    this.connection = new Store<ConnectionState>(this.live.state)
    this.live.onState((state) => this.connection.set(state))
    this.sessions = new SessionsStore(this.api, this.toasts)
    this.requests = new RequestsStore(this.api, this.live)
    this.settings = new SettingsStore(this.api)
    this.live.onFrame((frame) => {
      if (frame.type === 'sessions-changed') this.refreshListSoon()
      else if (frame.type === 'status') this.sessions.setRunning(frame.sessionId, frame.status === 'running')
      else if (frame.type === 'error') this.toasts.show('error', `${frame.error.message} (${frame.error.code})`)
    })
  }

  async start(): Promise<void> {
    const results = await Promise.allSettled([
      this.api.info().then((info) => this.info.set(info)),
      this.settings.load(),
      this.sessions.refresh(),
    ])
    for (const result of results) if (result.status === 'rejected') this.toasts.error(result.reason, 'Loading dsh')
  }

  /** Starts loading a session before the page renders (the session in the URL at startup). */
  prefetch(sessionId: SessionId): void {
    // A failed early load is asked again here, so errors read the same as any other load's.
    const early = takeEarlyLoad(sessionId)
    const request = early
      ? early.then((detail) => detail ?? readRecent(this.api, sessionId))
      : readRecent(this.api, sessionId)
    request.then(
      (detail) => {
        if (this.prefetched.get(sessionId) === request) this.prefetched.set(sessionId, detail)
      },
      () => {}, // the controller that takes it reports the failure
    )
    this.prefetched.set(sessionId, request)
  }

  /** A prefetched load of this session, handed out once: the detail itself when it has arrived. */
  takePrefetched(sessionId: SessionId): SessionDetail | Promise<SessionDetail> | undefined {
    const request = this.prefetched.get(sessionId)
    this.prefetched.delete(sessionId)
    return request
  }

  private refreshListSoon(): void {
    clearTimeout(this.listRefresh)
    this.listRefresh = setTimeout(() => void this.sessions.refresh(), 100)
  }
}
