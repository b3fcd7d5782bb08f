import type { DiagnosticSeverity, FileDiagnostic } from './tools.ts'

/** The severities of a language server's findings, most severe first. */
export const DIAGNOSTIC_SEVERITIES: readonly DiagnosticSeverity[] = ['error', 'warning', 'information', 'hint']

/** The language-server findings a tool result carries in `meta.diagnostics`, if any (malformed entries dropped). */
export function resultDiagnostics(meta: unknown): FileDiagnostic[] | undefined {
  if (meta === null || typeof meta !== 'object' || Array.isArray(meta)) return undefined
  const list = (meta as { diagnostics?: unknown }).diagnostics
  if (!Array.isArray(list)) return undefined
  return list.filter(
    (item): item is FileDiagnostic =>
      typeof item === 'object' &&
      item !== null &&
      typeof item.path === 'string' &&
      typeof item.message === 'string' &&
      Number.isInteger(item.line) &&
      Number.isInteger(item.character) &&
      DIAGNOSTIC_SEVERITIES.includes(item.severity),
  )
}

/** One finding as a line, `src/a.ts:12:5 error TS2322: message` (tsc's spelling of TypeScript codes), its path as given. */
export function diagnosticLine(item: FileDiagnostic, path: string): string {
  const code =
    item.code === undefined
      ? ''
      : item.source === 'typescript' && /^\d+$/.test(item.code)
        ? ` TS${item.code}`
        : ` ${item.code}`
  const message = item.message.replace(/\s*\n\s*/g, ' ')
  return `${path}:${item.line}:${item.character} ${item.severity}${code}: ${message}`
}
