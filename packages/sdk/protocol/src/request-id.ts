import type { RequestId } from './types.ts'

/** How much of a line `peekRequestId` reads by default: enough for the members a client writes before `params`. */
export const REQUEST_ID_SCAN_CHARS = 4096

const WHITESPACE = new Set([' ', '\t', '\n', '\r'])
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y
const LITERAL = /true|false|null/y
/** Raised inside the scan when the text is cut short or is not JSON where it matters. */
const STOP = Symbol('stop')

/**
 * The request id of a JSON-RPC message read from the start of a line that
 * could not be used whole (over the size limit, or not valid JSON), or null
 * when it cannot be told for sure.
 *
 * Only a member `"id"` of the top-level object counts, with a string or a
 * finite number as its value, complete (followed by `,` or `}`) within the
 * first `maxChars` characters. Members before it must be well-formed JSON;
 * `"id"` inside a nested value or a string is skipped over. A second
 * top-level `"id"`, or a top-level `"result"`/`"error"` (a response, whose id
 * belongs to the other side's requests), answers null.
 */
export function peekRequestId(line: string, maxChars = REQUEST_ID_SCAN_CHARS): RequestId | null {
  const text = line.length > maxChars ? line.slice(0, maxChars) : line
  let at = 0
  let found: RequestId | undefined
  let ambiguous = false

  const peek = (): string => {
    while (at < text.length && WHITESPACE.has(text[at] as string)) at++
    if (at >= text.length) throw STOP
    return text[at] as string
  }
  const expect = (char: string) => {
    if (peek() !== char) throw STOP
    at++
  }
  const readString = (): string => {
    expect('"')
    const start = at - 1
    for (; at < text.length; at++) {
      const c = text.charCodeAt(at)
      if (c < 0x20) throw STOP
      if (c === 0x5c) at++
      else if (c === 0x22) {
        at++
        try {
          return JSON.parse(text.slice(start, at)) as string
        } catch {
          throw STOP
        }
      }
    }
    throw STOP
  }
  const readPattern = (pattern: RegExp): string => {
    pattern.lastIndex = at
    const match = pattern.exec(text)
    if (!match) throw STOP
    at += match[0].length
    // A token running into the end of the text may have been cut short.
    if (at >= text.length) throw STOP
    return match[0]
  }
  const skipValue = () => {
    const c = peek()
    if (c === '"') return void readString()
    if (c !== '{' && c !== '[') return void readPattern(/[tfn]/.test(c) ? LITERAL : NUMBER)
    // Nested values only need their brackets balanced: nothing inside them counts.
    let depth = 0
    while (at < text.length) {
      const inner = text[at] as string
      if (inner === '"') {
        readString()
        continue
      }
      if (inner === '{' || inner === '[') depth++
      else if (inner === '}' || inner === ']') depth--
      at++
      if (depth === 0) return
    }
    throw STOP
  }

  try {
    expect('{')
    if (peek() === '}') return null
    for (;;) {
      const key = readString()
      expect(':')
      if (key === 'id') {
        const c = peek()
        const value = c === '"' ? readString() : Number(readPattern(NUMBER))
        const next = peek()
        if (next !== ',' && next !== '}') throw STOP
        if (typeof value === 'number' && !Number.isFinite(value)) ambiguous = true
        if (found !== undefined) ambiguous = true
        found = value
      } else {
        if (key === 'result' || key === 'error') ambiguous = true
        skipValue()
      }
      const separator = peek()
      at++
      if (separator === '}') break
      if (separator !== ',') throw STOP
    }
  } catch (error) {
    if (error !== STOP) throw error
  }
  return found === undefined || ambiguous ? null : found
}
