import type {
  ApprovalDecision,
  CommandInfo,
  ConnectionTest,
  ModelDiscovery,
  DirListing,
  Info,
  NewSession,
  OutgoingMessage,
  QuestionAnswer,
  RequestId,
  RewindRequest,
  RewindResult,
  SessionActivity,
  SessionDetail,
  SessionEvent,
  SessionId,
  SessionList,
  SessionPatch,
  Settings,
  SettingsUpdate,
} from './types.ts'

/** A failed API call: the server's error code and message, or `network` when no answer came. */
export class ApiError extends Error {
  readonly status: number
  readonly code: string
  readonly details: Record<string, unknown> | undefined

  constructor(status: number, code: string, message: string, details?: Record<string, unknown>) {
    super(message)
    this.name = 'ApiError'
    this.status = status
    this.code = code
    this.details = details
  }
}

export interface ApiOptions {
  /** Origin the API lives on; default: the page's own origin (relative URLs). */
  baseUrl?: string
  /** Access token for a non-loopback server (sent as a bearer token). */
  token?: string
  fetch?: typeof fetch
}

export interface SessionQuery {
  query?: string
  cwd?: string
  limit?: number
  cursor?: string
}

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'

/** Typed calls to the dsh web server's HTTP API. */
export class DshApi {
  private readonly baseUrl: string
  private readonly token: string | undefined
  private readonly fetchImpl: typeof fetch

  constructor(options: ApiOptions = {}) {
    this.baseUrl = (options.baseUrl ?? '').replace(/\/$/, '')
    this.token = options.token
    this.fetchImpl = options.fetch ?? ((input, init) => fetch(input, init))
  }

  info(): Promise<Info> {
    return this.call('GET', '/api/info')
  }

  listSessions(query: SessionQuery = {}): Promise<SessionList> {
    return this.call('GET', `/api/sessions${search(query)}`)
  }

  /** Creates a session in `cwd` (default: where `dsh web` was started). */
  createSession(body: NewSession = {}): Promise<{ sessionId: SessionId }> {
    return this.call('POST', '/api/sessions', body)
  }

  /** The session and its log; with `tail`, only the recent part of it (at least that many events, whole turns). */
  getSession(id: SessionId, options: { tail?: number } = {}): Promise<SessionDetail> {
    return this.call('GET', `/api/sessions/${enc(id)}${search({ tail: options.tail })}`)
  }

  /** The events of a session's log before `before` (a seq), oldest first. */
  getEvents(id: SessionId, before: number): Promise<{ events: SessionEvent[] }> {
    return this.call('GET', `/api/sessions/${enc(id)}/events${search({ before })}`)
  }

  sendMessage(id: SessionId, message: OutgoingMessage): Promise<{ queued: boolean }> {
    return this.call('POST', `/api/sessions/${enc(id)}/messages`, message)
  }

  /** Joins the running turn: the message reaches the model with its next step (400 when no turn runs). */
  steer(id: SessionId, message: OutgoingMessage): Promise<object> {
    return this.call('POST', `/api/sessions/${enc(id)}/steer`, message)
  }

  cancel(id: SessionId): Promise<object> {
    return this.call('POST', `/api/sessions/${enc(id)}/cancel`, {})
  }

  compact(id: SessionId): Promise<{ compacted: boolean; replaced: number; error?: string }> {
    return this.call('POST', `/api/sessions/${enc(id)}/compact`, {})
  }

  fork(id: SessionId, turn?: number): Promise<{ sessionId: SessionId }> {
    return this.call('POST', `/api/sessions/${enc(id)}/fork`, turn === undefined ? {} : { turn })
  }

  /** Forks the session before a user message; a dry run only lists the file changes a restore would make. */
  rewind(id: SessionId, request: RewindRequest): Promise<RewindResult> {
    return this.call('POST', `/api/sessions/${enc(id)}/rewind`, request)
  }

  /** The session's background jobs, terminals and subagents, with the newest output of each (redacted). */
  activity(id: SessionId): Promise<SessionActivity> {
    return this.call('GET', `/api/sessions/${enc(id)}/activity`)
  }

  updateSession(id: SessionId, patch: SessionPatch): Promise<object> {
    return this.call('PATCH', `/api/sessions/${enc(id)}`, patch)
  }

  deleteSession(id: SessionId): Promise<object> {
    return this.call('DELETE', `/api/sessions/${enc(id)}`)
  }

  answerApproval(requestId: RequestId, decision: ApprovalDecision, message?: string): Promise<object> {
    return this.call('POST', `/api/approvals/${enc(requestId)}`, message ? { decision, message } : { decision })
  }

  answerQuestion(requestId: RequestId, answers: QuestionAnswer[]): Promise<object> {
    return this.call('POST', `/api/questions/${enc(requestId)}`, { answers })
  }

  files(query: { cwd?: string; query?: string; limit?: number }): Promise<{ files: string[]; truncated: boolean }> {
    return this.call('GET', `/api/files${search(query)}`)
  }

  /** Commands callable as `/name args` in a workspace (the launch folder when none is given). */
  commands(cwd?: string): Promise<{ commands: CommandInfo[] }> {
    return this.call('GET', `/api/commands${search({ cwd })}`)
  }

  dirs(path?: string, hidden = false): Promise<DirListing> {
    return this.call('GET', `/api/dirs${search({ path, hidden: hidden ? 1 : undefined })}`)
  }

  workspaces(): Promise<{ workspaces: string[] }> {
    return this.call('GET', '/api/workspaces')
  }

  settings(): Promise<Settings> {
    return this.call('GET', '/api/settings')
  }

  saveSettings(update: SettingsUpdate): Promise<Settings> {
    return this.call('PUT', '/api/settings', update)
  }

  testConnection(): Promise<ConnectionTest> {
    return this.call('POST', '/api/settings/test', {})
  }

  discoverModels(route = 'openai-compatible'): Promise<ModelDiscovery> {
    return this.call('POST', '/api/settings/models', { route })
  }

  private async call<T>(method: Method, path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json' }
    if (body !== undefined) headers['content-type'] = 'application/json'
    if (this.token) headers.authorization = `Bearer ${this.token}`
    let response: Response
    try {
      response = await this.fetchImpl(this.baseUrl + path, {
        method,
        headers,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      })
    } catch (error) {
      throw new ApiError(0, 'network', `${method} ${path} failed: the dsh server did not answer (${describe(error)})`)
    }
    const text = await response.text()
    const parsed = parseJson(text)
    if (!response.ok) throw errorOf(response.status, method, path, parsed, text)
    return (parsed ?? {}) as T
  }
}

function errorOf(status: number, method: string, path: string, parsed: unknown, text: string): ApiError {
  const error = (parsed as { error?: { code?: unknown; message?: unknown; details?: unknown } } | undefined)?.error
  if (error && typeof error.code === 'string') {
    const message = typeof error.message === 'string' ? error.message : `${method} ${path} failed`
    const details =
      error.details && typeof error.details === 'object' ? (error.details as Record<string, unknown>) : undefined
    return new ApiError(status, error.code, message, details)
  }
  const snippet = text.trim().slice(0, 200)
  return new ApiError(status, `http-${status}`, `${method} ${path} answered ${status}${snippet ? `: ${snippet}` : ''}`)
}

function parseJson(text: string): unknown {
  if (!text) return undefined
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

function search(params: object): string {
  const query = new URLSearchParams()
  for (const [key, value] of Object.entries(params))
    if (value !== undefined && value !== '') query.set(key, String(value))
  const text = query.toString()
  return text ? `?${text}` : ''
}

function enc(id: string): string {
  return encodeURIComponent(id)
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
