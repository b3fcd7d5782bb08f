import type { DiagnosticSeverity, FileDiagnostic } from '@dsh/web-client'

const SEVERITIES: readonly DiagnosticSeverity[] = ['error', 'warning', 'information', 'hint']

/** The language-server findings a tool result carries in `meta.diagnostics` (see `FileDiagnostic`), if any. */
export function diagnosticsOf(meta: unknown): FileDiagnostic[] {
  if (meta === null || typeof meta !== 'object' || Array.isArray(meta)) return []
  const list = (meta as { diagnostics?: unknown }).diagnostics
  if (!Array.isArray(list)) return []
  return list.filter(
    (item): item is FileDiagnostic =>
      typeof item?.path === 'string' &&
      typeof item.message === 'string' &&
      Number.isInteger(item.line) &&
      Number.isInteger(item.character) &&
      SEVERITIES.includes(item.severity),
  )
}

/** A path as the user reads it: relative inside the session's folder. */
function shown(path: string, cwd: string | undefined): string {
  return cwd && path.startsWith(`${cwd}/`) ? path.slice(cwd.length + 1) : path
}

/** `src/a.ts:12:5 error TS2322: message`, one per line. */
export function diagnosticsText(items: readonly FileDiagnostic[], cwd?: string): string {
  return items
    .map((item) => {
      const code =
        item.code === undefined
          ? ''
          : item.source === 'typescript' && /^\d+$/.test(item.code)
            ? ` TS${item.code}`
            : ` ${item.code}`
      return `${shown(item.path, cwd)}:${item.line}:${item.character} ${item.severity}${code}: ${item.message}`
    })
    .join('\n')
}
