import { stat } from 'node:fs/promises'
import path from 'node:path'
import { ConversationError, type SessionView as Shown } from '@dsh/conversations'
import { assertNever, type Context } from '@dsh/cordis'
import { sessionIdProblem } from '@dsh/sdk-protocol'
import { SettingsFileError } from '@dsh/user-settings'
import type { z } from 'zod'
import { type ApiRequest, HttpError, parseWith, type RouteHandler } from '@dsh/local-http'

/** A 400 naming `parameter`, in the shape `parseWith` gives (`details.issues`). */
export function badParameter(parameter: string, message: string): HttpError {
  return new HttpError(400, 'bad-request', `${parameter}: ${message}`, { issues: [{ path: parameter, message }] })
}

/** `value` as a normalized absolute path, or a 400 naming the parameter. */
export function absolutePath(value: string, parameter: string): string {
  if (!path.isAbsolute(value))
    throw new HttpError(400, 'bad-request', `${parameter} must be an absolute path, got ${JSON.stringify(value)}`)
  return path.resolve(value)
}

/** An absolute path to an existing folder, or a 400 naming the parameter. */
export async function existingFolder(value: string, parameter: string): Promise<string> {
  const resolved = absolutePath(value, parameter)
  const info = await stat(resolved).catch(() => undefined)
  if (!info) throw new HttpError(400, 'bad-request', `${parameter}: ${resolved} does not exist`)
  if (!info.isDirectory()) throw new HttpError(400, 'bad-request', `${parameter}: ${resolved} is not a folder`)
  return resolved
}

/** The request's query parameters checked with `schema` (a 400 names each bad one). */
export function queryOf<S extends z.ZodType>(schema: S, request: ApiRequest): z.output<S> {
  return parseWith(schema, Object.fromEntries(request.query), 'query')
}

/** The request's JSON body (none counts as `{}`) checked with `schema`; a 400 names `what` and each bad field. */
export async function bodyOf<S extends z.ZodType>(schema: S, request: ApiRequest, what: string): Promise<z.output<S>> {
  return parseWith(schema, (await request.body()) ?? {}, what)
}

/** `id` when it can name a session, else a 400 naming the parameter it came in (a path like `../../etc/passwd`, a wrong shape). */
export function checkedSessionId(id: string, parameter = 'id'): string {
  const problem = sessionIdProblem(id)
  if (problem) throw badParameter(parameter, `${JSON.stringify(id)} ${problem}`)
  return id
}

/** The API's name of a conversation service argument. */
const FIELDS: Record<string, string> = { preset: 'permissionPreset' }

/**
 * The one translation of service errors to the API's HTTP errors (see API.md):
 * a conversation error by its kind, a settings file failure as a 500; any other error as it is.
 */
export function httpError(error: unknown): unknown {
  if (error instanceof SettingsFileError) return new HttpError(500, 'internal', error.message)
  if (!(error instanceof ConversationError)) return error
  const field = error.details.field && (FIELDS[error.details.field] ?? error.details.field)
  switch (error.kind) {
    case 'not-found':
      return new HttpError(404, 'unknown-session', error.message)
    case 'busy':
      return new HttpError(409, 'busy', error.message)
    case 'invalid':
      return field ? badParameter(field, error.message) : new HttpError(400, 'bad-request', error.message)
    case 'unavailable':
      return new HttpError(503, 'unavailable', error.message)
    default:
      return assertNever(error.kind)
  }
}

/** The service's view of a session in the API's shape (`permissionPreset`, never missing). */
export function described({ preset, ...view }: Shown): Record<string, unknown> {
  return { ...view, permissionPreset: preset ?? 'workspace-write' }
}

/** Registers an API route of the gateway; a service error it throws becomes its HTTP error (`httpError`). */
export type Route = (method: string, path: string, handler: RouteHandler) => void

export function gatewayRoute(ctx: Context): Route {
  return (method, path, handler) =>
    void ctx.webServer.route(ctx, method, path, async (request) => {
      try {
        return await handler(request)
      } catch (error) {
        throw httpError(error)
      }
    })
}
