/** Tool arguments parsed from the model's raw JSON text; `undefined` while it is incomplete or invalid. */
export function parseArgs(raw: unknown): Record<string, unknown> | undefined {
  if (raw && typeof raw === 'object' && !Array.isArray(raw)) return raw as Record<string, unknown>
  if (typeof raw !== 'string' || !raw.trim()) return undefined
  try {
    const value = JSON.parse(raw) as unknown
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined
  } catch {
    return undefined
  }
}

/** Arguments pretty-printed for display (raw text when they are not JSON yet). */
export function prettyArgs(raw: unknown): string {
  const args = parseArgs(raw)
  if (!args) return typeof raw === 'string' ? raw : JSON.stringify(raw)
  return JSON.stringify(args, null, 2)
}
