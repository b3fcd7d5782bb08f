import type { z } from 'zod'
import { ErrorCodes, RpcError } from './codes.ts'

export interface FieldIssue {
  /** Dotted path of the field, e.g. `content.0.text`; empty for the params object itself. */
  field: string
  message: string
}

type Issue = z.core.$ZodIssue

/**
 * One per field. A value that matches no member of a union is reported
 * through the member it came closest to (its issues reach deepest), so a
 * list of blocks with one bad block names that block's field.
 */
function flatten(issue: Issue, prefix: PropertyKey[]): FieldIssue[] {
  const path = [...prefix, ...issue.path]
  if (issue.code === 'invalid_union' && issue.errors.length > 0) {
    const depth = (branch: Issue[]) => Math.max(-1, ...branch.map((i) => i.path.length))
    const [best, next] = [...issue.errors].sort((a, b) => depth(b) - depth(a))
    if (best && depth(best) > (next ? depth(next) : -1)) return best.flatMap((i) => flatten(i, path))
  }
  return [{ field: path.map(String).join('.'), message: issue.message }]
}

/** The issues of a failed parse, one per field. */
export function fieldIssues(error: z.ZodError): FieldIssue[] {
  return error.issues.flatMap((issue) => flatten(issue, []))
}

/**
 * Parses `params` with `schema`; on failure throws a -32602 `RpcError` whose
 * message names the first bad field and whose `data` is `{field, issues}`.
 * Missing params count as `{}`; params that are not an object are refused.
 */
export function parseParams<S extends z.ZodType>(method: string, schema: S, params: unknown): z.output<S> {
  if (params !== undefined && (params === null || typeof params !== 'object' || Array.isArray(params))) {
    throw new RpcError(ErrorCodes.InvalidParams, `${method}: params must be an object`, { field: '', issues: [] })
  }
  const result = schema.safeParse(params ?? {})
  if (result.success) return result.data
  const issues = fieldIssues(result.error)
  const first = issues[0] ?? { field: '', message: 'invalid' }
  throw new RpcError(ErrorCodes.InvalidParams, `${method}: ${first.field || 'params'}: ${first.message}`, {
    field: first.field,
    issues,
  })
}

/** An `InvalidParams` error about one field, for checks a schema cannot make. */
export function invalidField(method: string, field: string, message: string): RpcError {
  return new RpcError(ErrorCodes.InvalidParams, `${method}: ${field}: ${message}`, {
    field,
    issues: [{ field, message }],
  })
}
