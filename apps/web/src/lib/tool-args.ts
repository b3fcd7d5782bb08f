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

export function stringArg(args: Record<string, unknown> | undefined, ...names: string[]): string | undefined {
  for (const name of names) {
    const value = args?.[name]
    if (typeof value === 'string' && value) return value
  }
  return undefined
}

/** A one-line summary of a call: the command, path, pattern or query it acts on. */
export function callSummary(name: string, raw: unknown): string {
  const args = parseArgs(raw)
  if (!args) return ''
  if (name === 'bash') return stringArg(args, 'command') ?? ''
  return stringArg(args, 'path', 'file_path', 'pattern', 'query', 'url', 'description', 'prompt') ?? ''
}

/** Arguments pretty-printed for display (raw text when they are not JSON yet). */
export function prettyArgs(raw: unknown): string {
  const args = parseArgs(raw)
  if (!args) return typeof raw === 'string' ? raw : JSON.stringify(raw)
  return JSON.stringify(args, null, 2)
}
