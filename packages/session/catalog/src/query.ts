import { separateCjk } from './cjk.ts'

/**
 * An FTS5 query matching text that holds every word of `text` (a word of
 * CJK characters: those characters in a row, see cjk.ts). Each word is
 * quoted as an FTS5 string, so quotes, operators (`AND`, `NEAR`, `*`, `^`,
 * `-`, `:`) and parentheses typed by a user are searched for, never parsed.
 * Undefined when `text` has no letter or digit to search for.
 */
export function matchExpression(text: string): string | undefined {
  const words = text.split(/\s+/).filter((word) => /[\p{L}\p{N}]/u.test(word))
  if (words.length === 0) return undefined
  return words.map((word) => `"${separateCjk(word).replaceAll('"', '""')}"`).join(' ')
}

/** Where a page of `list()` ended: the sort key of its last entry. */
export interface CursorPosition {
  updatedAt: number
  sessionId: string
}

export function encodeCursor(position: CursorPosition): string {
  return Buffer.from(JSON.stringify([position.updatedAt, position.sessionId])).toString('base64url')
}

export function decodeCursor(cursor: string): CursorPosition {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
    if (Array.isArray(value) && value.length === 2 && Number.isFinite(value[0]) && typeof value[1] === 'string') {
      return { updatedAt: value[0] as number, sessionId: value[1] }
    }
  } catch {
    // reported below
  }
  throw new Error(`invalid cursor ${JSON.stringify(cursor)}: pass the nextCursor of a previous page`)
}
