/** A change to every string value (not keys) on the way in, e.g. redaction. */
export type TextMap = (text: string) => string

/**
 * Deep-copies `value` as lossless JSON and freezes the copy. Throws naming
 * the path of the first value JSON cannot carry exactly (functions, symbols,
 * bigint, NaN, Infinity, -0, class instances, cycles, sparse arrays).
 * Object keys whose value is undefined are left out. `text` rewrites every
 * string value of the copy.
 */
export function frozenJsonCopy<T>(value: T, path = 'data', text?: TextMap): T {
  return walk(value, [path], new Set(), true, text) as T
}

/**
 * Checks `value` as `frozenJsonCopy` does and freezes it in place, for data
 * the caller hands over and no longer touches (objects fresh from
 * `JSON.parse`): no copy is made, and keys whose value is undefined are
 * deleted. Returns `value`.
 */
export function adoptFrozenJson<T>(value: T, path = 'data', text?: TextMap): T {
  return walk(value, [path], new Set(), false, text) as T
}

/** The path of the value being walked: the root's name, then array indexes and object keys. Joined only for an error. */
type Trail = (string | number)[]

function pathOf(trail: Trail): string {
  return trail.map((step, i) => (i === 0 ? step : typeof step === 'number' ? `[${step}]` : `.${step}`)).join('')
}

function walk(value: unknown, trail: Trail, seen: Set<object>, copy: boolean, text: TextMap | undefined): unknown {
  if (typeof value === 'string') return text ? text(value) : value
  if (value === null || typeof value === 'boolean') return value
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || Object.is(value, -0))
      throw new TypeError(`${pathOf(trail)} is ${value}, which JSON cannot carry`)
    return value
  }
  if (typeof value !== 'object') throw new TypeError(`${pathOf(trail)} is a ${typeof value}, which JSON cannot carry`)
  if (seen.has(value)) throw new TypeError(`${pathOf(trail)} refers back to itself`)
  seen.add(value)
  try {
    if (Array.isArray(value)) {
      const out: unknown[] = copy ? [] : value
      for (let i = 0; i < value.length; i++) {
        if (!(i in value)) throw new TypeError(`${pathOf([...trail, i])} is a hole in a sparse array`)
        trail.push(i)
        const item = walk(value[i], trail, seen, copy, text)
        trail.pop()
        if (copy) out.push(item)
        else if (item !== value[i]) out[i] = item
      }
      return Object.freeze(out)
    }
    const proto = Object.getPrototypeOf(value)
    if (proto !== Object.prototype && proto !== null)
      throw new TypeError(`${pathOf(trail)} is a ${proto?.constructor?.name ?? 'class'} instance, not plain data`)
    const source = value as Record<string, unknown>
    const out: Record<string, unknown> = copy ? {} : source
    for (const [key, item] of Object.entries(source)) {
      if (item === undefined) {
        if (copy) continue
        if (Object.isFrozen(source))
          throw new TypeError(`${pathOf([...trail, key])} is undefined, which JSON cannot carry`)
        delete out[key]
        continue
      }
      trail.push(key)
      const checked = walk(item, trail, seen, copy, text)
      trail.pop()
      if (copy || checked !== item) out[key] = checked
    }
    return Object.freeze(out)
  } finally {
    seen.delete(value)
  }
}
