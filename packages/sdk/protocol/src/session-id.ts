const SHAPE = /^[A-Za-z0-9][A-Za-z0-9._:@+=-]{0,199}$/

/**
 * Why `id` cannot be a session id, or undefined when it can: 1 to 200
 * letters, digits and `. _ : @ + = -`, starting with a letter or digit, with
 * no `..`. Every id dsh issues (`session-<uuid>`) fits; anything else (a path,
 * an empty string) names no session and is refused before storage sees it.
 */
export function sessionIdProblem(id: unknown): string | undefined {
  if (typeof id !== 'string') return 'must be a string'
  if (!SHAPE.test(id))
    return 'must be a session id (1 to 200 letters, digits and . _ : @ + = -, starting with a letter or digit)'
  if (id.includes('..')) return 'must be a session id, without ".."'
  return undefined
}
