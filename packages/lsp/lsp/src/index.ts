import type { Context } from '@dsh/cordis'
import { Lsp } from './seam.ts'

export {
  type DiagnosticSeverity,
  type FileDiagnostic,
  LSP_OPERATIONS,
  Lsp,
  type LspAnswer,
  type LspDiagnosticsRequest,
  type LspDiagnosticsResult,
  LspError,
  type LspErrorCode,
  type LspLocation,
  type LspOperation,
  type LspPosition,
  type LspProvider,
  type LspQuery,
  type LspRange,
  NO_PROVIDER_HINT,
} from './seam.ts'

export const name = 'lsp'

/** Provides `ctx.lsp`, the seam language-server providers register on. */
export function apply(ctx: Context) {
  ctx.plugin(Lsp)
}
