import type { IncomingMessage, ServerResponse } from 'node:http'
import { errorMessage } from '@dsh/tools'
import type { z } from 'zod'

/** An API failure with its HTTP status and error code (see API.md). */
export class HttpError extends Error {
  override name = 'HttpError'
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: Record<string, unknown>,
    readonly headers?: Record<string, string>,
  ) {
    super(message)
  }
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body)
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    ...headers,
  })
  res.end(text)
}

export function errorBody(error: HttpError): {
  error: { code: string; message: string; details?: Record<string, unknown> }
} {
  return { error: { code: error.code, message: error.message, ...(error.details ? { details: error.details } : {}) } }
}

export function sendError(res: ServerResponse, error: HttpError): void {
  if (res.headersSent) {
    res.destroy()
    return
  }
  sendJson(res, error.status, errorBody(error), error.headers)
}

/**
 * Reads a JSON body of at most `limit` bytes. No body gives `undefined`.
 * Throws 413 (too large), 415 (not JSON content type) or 400 (bad JSON).
 * An oversized body is read to its end and dropped (up to four times the
 * limit), so the client sees the 413 instead of a reset connection.
 */
export async function readJsonBody(req: IncomingMessage, limit: number): Promise<unknown> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size > limit * 4) break
    if (size <= limit) chunks.push(chunk)
  }
  if (size > limit)
    throw new HttpError(
      413,
      'too-large',
      `the request body is over the limit of ${limit} bytes (maxBodyBytes); it was ${size > limit * 4 ? 'more than ' : ''}${size} bytes`,
    )
  if (size === 0) return undefined
  const type = String(req.headers['content-type'] ?? '')
  if (!/^application\/json\s*(;|$)/i.test(type)) {
    throw new HttpError(
      415,
      'unsupported-media-type',
      `Content-Type must be application/json, got ${type ? JSON.stringify(type) : 'none'}`,
    )
  }
  return parseJson(Buffer.concat(chunks, size).toString('utf8'), 'the request body')
}

/** `text` parsed as JSON; else a 400 `bad-json` saying `what` is not valid JSON, with the position when known. */
export function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text)
  } catch (error) {
    const detail = errorMessage(error)
    const position = /position (\d+)/.exec(detail)?.[1]
    throw new HttpError(
      400,
      'bad-json',
      `${what} is not valid JSON: ${detail}`,
      position ? { position: Number(position) } : undefined,
    )
  }
}

/** Validates `value` with a zod schema; the error names every bad field. */
export function parseWith<S extends z.ZodType>(schema: S, value: unknown, what: string): z.output<S> {
  const result = schema.safeParse(value)
  if (result.success) return result.data
  const issues = result.error.issues.map((issue) => ({ path: issue.path.join('.'), message: issue.message }))
  const summary = issues.map((i) => (i.path ? `${i.path}: ${i.message}` : i.message)).join('; ')
  throw new HttpError(400, 'bad-request', `${what}: ${summary}`, { issues })
}
