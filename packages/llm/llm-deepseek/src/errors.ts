import { failure, type LlmFailure } from '@dsh/llm'

type Headers = Record<string, string | string[] | undefined>

const QUOTA = /quota|balance|credit|billing|insufficient[_ ]?funds|payment/i
const CONTEXT =
  /context[ _-]?(length|window)|maximum context|too many tokens|prompt is too long|input is too long|reduce the length|exceeds? the (model'?s? )?(max|context)/i

function header(headers: Headers, name: string): string | undefined {
  const value = headers[name]
  return Array.isArray(value) ? value[0] : value
}

export function requestIdOf(headers: Headers): string | undefined {
  return header(headers, 'x-request-id') ?? header(headers, 'x-deepseek-request-id')
}

/** `Retry-After` (seconds or an HTTP date) or `retry-after-ms`, in milliseconds. */
export function retryAfterMs(headers: Headers, now = Date.now()): number | undefined {
  const ms = header(headers, 'retry-after-ms')
  if (ms !== undefined && /^\d+(\.\d+)?$/.test(ms.trim())) return Math.round(Number(ms))
  const value = header(headers, 'retry-after')?.trim()
  if (!value) return undefined
  if (/^\d+(\.\d+)?$/.test(value)) return Math.round(Number(value) * 1000)
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}

/** The human part of an error body: `error.message`, `message`, `detail`, or the text itself. */
export function providerMessage(text: string): string {
  const trimmed = text.trim()
  if (!trimmed) return 'no error message'
  try {
    const body = JSON.parse(trimmed) as Record<string, unknown>
    const error = body.error
    const candidates = [
      typeof error === 'object' && error !== null ? (error as Record<string, unknown>).message : undefined,
      typeof error === 'string' ? error : undefined,
      body.message,
      body.detail,
    ]
    for (const candidate of candidates) if (typeof candidate === 'string' && candidate.trim()) return candidate.trim()
  } catch {
    // not JSON: use the text
  }
  return trimmed.length > 500 ? `${trimmed.slice(0, 500)}…` : trimmed
}

export interface HttpErrorContext {
  /** Who answered, for messages: `DeepSeek`, `the openai-compatible server at http://…`. */
  label: string
  /** The variable the key came from, named in AUTH messages. */
  keyEnv?: string
}

/** Maps an HTTP error status and body to a failure with a code the retry policy understands. */
export function httpFailure(status: number, bodyText: string, headers: Headers, context: HttpErrorContext): LlmFailure {
  const said = providerMessage(bodyText)
  const extra: Partial<LlmFailure> = { status }
  const retryAfter = retryAfterMs(headers)
  if (retryAfter !== undefined) extra.retryAfterMs = retryAfter
  const requestId = requestIdOf(headers)
  if (requestId !== undefined) extra.requestId = requestId
  const quoted = `(HTTP ${status}: ${said})`

  if (status === 401 || status === 403) {
    const hint = context.keyEnv ? ` Check the key in ${context.keyEnv}.` : ''
    return failure('AUTH', `${context.label} refused the API key ${quoted}.${hint}`, extra)
  }
  if (status === 402 || (status === 429 && QUOTA.test(said))) {
    return failure(
      'QUOTA',
      `${context.label} says the account has no balance or quota left ${quoted}. Top up the account or use another provider.`,
      extra,
    )
  }
  if (status === 429) {
    const wait = retryAfter !== undefined ? ` It asks to wait ${Math.ceil(retryAfter / 1000)}s.` : ''
    return failure('RATE_LIMIT', `${context.label} is rate limiting requests ${quoted}.${wait}`, extra)
  }
  if (status === 400 && CONTEXT.test(said)) {
    return failure(
      'CONTEXT_WINDOW_EXCEEDED',
      `The conversation no longer fits the model's context window ${quoted}.`,
      extra,
    )
  }
  if (status === 400 || status === 413) {
    return failure('INVALID_REQUEST', `${context.label} rejected the request ${quoted}.`, extra)
  }
  if (status >= 500) {
    return failure('SERVER', `${context.label} had a server error ${quoted}.`, extra)
  }
  return failure(`HTTP_${status}`, `${context.label} answered ${quoted}.`, extra)
}

/** A readable reason from a network error (undici's, or a system error with a code). */
export function networkDetail(error: unknown): string {
  if (!(error instanceof Error)) return String(error)
  const code = (error as { code?: unknown }).code
  const cause = (error as { cause?: unknown }).cause
  const parts = [error.message]
  if (cause instanceof Error && cause.message && !error.message.includes(cause.message)) parts.push(cause.message)
  if (typeof code === 'string' && !parts.some((p) => p.includes(code))) parts.push(code)
  return parts.join(': ')
}

export function isConnectTimeout(error: unknown): boolean {
  return error instanceof Error && (error as { code?: unknown }).code === 'UND_ERR_CONNECT_TIMEOUT'
}
