import { diagnosticLine, type FileDiagnostic, resultDiagnostics } from '@dsh/web-client'

/** The language-server findings a tool result carries in `meta.diagnostics` (see `FileDiagnostic`), if any. */
export function diagnosticsOf(meta: unknown): FileDiagnostic[] {
  return resultDiagnostics(meta) ?? []
}

/** A path as the user reads it: relative inside the session's folder. */
function shown(path: string, cwd: string | undefined): string {
  return cwd && path.startsWith(`${cwd}/`) ? path.slice(cwd.length + 1) : path
}

/** `src/a.ts:12:5 error TS2322: message`, one per line. */
export function diagnosticsText(items: readonly FileDiagnostic[], cwd?: string): string {
  return items.map((item) => diagnosticLine(item, shown(item.path, cwd))).join('\n')
}
