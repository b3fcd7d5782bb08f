/**
 * Deep-copies `value` as lossless JSON and freezes the copy. Throws naming
 * the path of the first value JSON cannot carry exactly (functions, symbols,
 * bigint, NaN, Infinity, -0, class instances, cycles, sparse arrays).
 * Object keys whose value is undefined are left out.
 */
export function frozenJsonCopy<T>(value: T, path = 'data'): T {
  return copy(value, path, new Set()) as T
}

function copy(value: unknown, path: string, seen: Set<object>): unknown {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || Object.is(value, -0)) throw new TypeError(`${path} is ${value}, which JSON cannot carry`)
    return value
  }
  if (typeof value !== 'object') throw new TypeError(`${path} is a ${typeof value}, which JSON cannot carry`)
  if (seen.has(value)) throw new TypeError(`${path} refers back to itself`)
  seen.add(value)
  try {
    if (Array.isArray(value)) {
      const out: unknown[] = []
      for (let i = 0; i < value.length; i++) {
        if (!(i in value)) throw new TypeError(`${path}[${i}] is a hole in a sparse array`)
        out.push(copy(value[i], `${path}[${i}]`, seen))
      }
      return Object.freeze(out)
    }
    const proto = Object.getPrototypeOf(value)
    if (proto !== Object.prototype && proto !== null) throw new TypeError(`${path} is a ${proto?.constructor?.name ?? 'class'} instance, not plain data`)
    const out: Record<string, unknown> = {}
    for (const [key, item] of Object.entries(value)) {
      if (item === undefined) continue
      out[key] = copy(item, `${path}.${key}`, seen)
    }
    return Object.freeze(out)
  } finally {
    seen.delete(value)
  }
}
