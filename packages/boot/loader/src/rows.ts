import { ConfigError } from './errors.ts'

/** A `!!js` expression, evaluated in the row's context once its injections are live. */
export class JsExpr {
  constructor(readonly source: string) {}
}

export type Disabled = boolean | null | JsExpr

/** One node of the plugin tree. A group row holds its child rows in `config`. */
export interface Row {
  id: string
  name?: string
  config?: unknown
  disabled?: Disabled
  inject?: string[]
  group?: boolean
}

const ROW_KEYS = new Set(['id', 'name', 'config', 'disabled', 'inject', 'group'])

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object') return false
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

export function describe(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'a list'
  if (value instanceof JsExpr) return 'a !!js expression'
  return typeof value === 'object' ? 'a mapping' : `${typeof value} ${JSON.stringify(value)}`
}

export function checkDisabled(value: unknown, where: string): Disabled {
  if (value === null || typeof value === 'boolean' || value instanceof JsExpr) return value
  throw new ConfigError(`${where}: "disabled" must be true, false or a !!js expression, got ${describe(value)}`)
}

export function checkInject(value: unknown, where: string): string[] {
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string' && v.length > 0)) {
    throw new ConfigError(`${where}: "inject" must be a list of service names, got ${describe(value)}`)
  }
  return [...value]
}

/**
 * Checks the shape of one row (and, for a group, of its children) and returns
 * a normalised copy. `rewriteName` turns relative module names into absolute
 * ones against the file the row came from.
 */
export function checkRow(raw: unknown, where: string, rewriteName: (name: string) => string = (n) => n): Row {
  if (!isPlainObject(raw)) throw new ConfigError(`${where}: a row must be a mapping, got ${describe(raw)}`)
  for (const key of Object.keys(raw)) {
    if (!ROW_KEYS.has(key))
      throw new ConfigError(`${where}: unknown row key "${key}" (allowed: ${[...ROW_KEYS].join(', ')})`)
  }
  const { id } = raw
  if (typeof id !== 'string' || !/^[^\s]+$/.test(id)) {
    throw new ConfigError(`${where}: a row needs an "id" (a non-empty string without spaces), got ${describe(id)}`)
  }
  const at = `${where}, row "${id}"`
  const row: Row = { id }
  if (raw.group !== undefined) {
    if (typeof raw.group !== 'boolean') throw new ConfigError(`${at}: "group" must be true or false`)
    if (raw.group) row.group = true
  }
  if (raw.name !== undefined) {
    if (typeof raw.name !== 'string' || raw.name.length === 0)
      throw new ConfigError(`${at}: "name" must be a module name`)
    row.name = rewriteName(raw.name)
  } else if (!row.group) {
    throw new ConfigError(`${at}: "name" (the plugin module) is required`)
  }
  if (raw.disabled !== undefined) row.disabled = checkDisabled(raw.disabled, at)
  if (raw.inject !== undefined) row.inject = checkInject(raw.inject, at)
  if (row.group) {
    row.config = checkChildren(raw.config ?? [], at, rewriteName)
  } else if (raw.config !== undefined) {
    row.config = raw.config
  }
  return row
}

export function checkChildren(raw: unknown, where: string, rewriteName?: (name: string) => string): Row[] {
  if (!Array.isArray(raw))
    throw new ConfigError(`${where}: a group's "config" must be a list of rows, got ${describe(raw)}`)
  return raw.map((child, i) => checkRow(child, `${where}, child ${i + 1}`, rewriteName))
}

/** Every row of a tree with its parent group id, depth first, in order. */
export function* walkRows(rows: Row[], parent: string | null = null): Generator<{ row: Row; parent: string | null }> {
  for (const row of rows) {
    yield { row, parent }
    if (row.group) yield* walkRows(row.config as Row[], row.id)
  }
}

/** Ids are the reconcile key, so they must be unique across the whole tree. */
export function checkUniqueIds(rows: Row[], where: string): void {
  const seen = new Set<string>()
  for (const { row } of walkRows(rows)) {
    if (seen.has(row.id)) throw new ConfigError(`${where}: row id "${row.id}" appears more than once`)
    seen.add(row.id)
  }
}

/** Deep copy that keeps `JsExpr` nodes (they are immutable, so shared). */
export function cloneValue<T>(value: T): T {
  if (Array.isArray(value)) return value.map(cloneValue) as T
  if (isPlainObject(value)) {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) out[k] = cloneValue(v)
    return out as T
  }
  return value
}

export function valuesEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (a instanceof JsExpr || b instanceof JsExpr) {
    return a instanceof JsExpr && b instanceof JsExpr && a.source === b.source
  }
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((v, i) => valuesEqual(v, b[i]))
  }
  if (isPlainObject(a) && isPlainObject(b)) {
    const ka = Object.keys(a).filter((k) => a[k] !== undefined)
    const kb = Object.keys(b).filter((k) => b[k] !== undefined)
    return ka.length === kb.length && ka.every((k) => valuesEqual(a[k], b[k]))
  }
  return false
}

export function containsJs(value: unknown): boolean {
  if (value instanceof JsExpr) return true
  if (Array.isArray(value)) return value.some(containsJs)
  if (isPlainObject(value)) return Object.values(value).some(containsJs)
  return false
}
