import { ConversationError, type SessionView as Shown } from '@dsh/conversations'
import { assertNever, type Context } from '@dsh/cordis'
import { sessionIdProblem } from '@dsh/sdk-protocol'
import { SettingsFileError } from '@dsh/user-settings'
import { HttpError } from '../http.ts'
import type { RouteHandler } from '../server.ts'

/** A 400 naming `parameter`, in the shape `parseWith` gives (`details.issues`). */
export function badParameter(parameter: string, message: string): HttpError {
  return new HttpError(400, 'bad-request', `${parameter}: ${message}`, { issues: [{ path: parameter, message }] })
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
