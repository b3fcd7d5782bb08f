import { extname } from 'node:path'
import { type Context, ScopedRegistry, Service } from '@dsh/cordis'
import type { FileDiagnostic } from '@dsh/wire-types'

declare module '@dsh/cordis' {
  interface Context {
    lsp: Lsp
  }
}

export type { DiagnosticSeverity, FileDiagnostic } from '@dsh/wire-types'

/** What the `lsp` tool asks. The names are the seeds' catalog. */
export const LSP_OPERATIONS = ['goToDefinition', 'findReferences', 'goToImplementation', 'hover'] as const
export type LspOperation = (typeof LSP_OPERATIONS)[number]

/** A zero-based line and UTF-16 character, as LSP counts them. */
export interface LspPosition {
  line: number
  character: number
}

export interface LspRange {
  start: LspPosition
  end: LspPosition
}

/** A place in a file; `file` is an absolute path. */
export interface LspLocation {
  file: string
  range: LspRange
}

/** One question about one position of one file of a session's workspace. */
export interface LspQuery {
  operation: LspOperation
  /** Absolute path of the file, inside `workspace`. */
  file: string
  position: LspPosition
  /** The session's workspace: servers never see anything above it. */
  workspace: string
  sessionId: string
  signal?: AbortSignal
}

export type LspAnswer =
  | { kind: 'locations'; locations: LspLocation[]; notes: string[] }
  | { kind: 'hover'; markdown: string | null; notes: string[] }

/** The files a call just changed: their new errors, after a bounded wait. */
export interface LspDiagnosticsRequest {
  /** Absolute paths inside `workspace`. */
  files: string[]
  workspace: string
  sessionId: string
  /** The longest wait for the servers' answers, in milliseconds. */
  waitMs: number
  signal?: AbortSignal
}

/**
 * What the servers said about the files. `checked` lists the files a server
 * reported on within the wait (a file missing from it may still have errors
 * nobody reported yet); `diagnostics` holds their findings.
 */
export interface LspDiagnosticsResult {
  checked: string[]
  diagnostics: FileDiagnostic[]
}

export type LspErrorCode =
  /** No provider, or no server for the file's language can run here. */
  | 'LSP_UNAVAILABLE'
  /** The file is not of a language any server is configured for. */
  | 'LSP_NO_SERVER'
  /** The file's server does not offer the operation. */
  | 'LSP_UNSUPPORTED'
  /** The server took longer than its request timeout. */
  | 'LSP_TIMEOUT'
  /** The server failed: it died mid-request, answered an error or garbage. */
  | 'LSP_SERVER_FAILED'

/** A query that could not be answered; the tool turns it into an error result. */
export class LspError extends Error {
  override name = 'LspError'

  constructor(
    readonly code: LspErrorCode,
    message: string,
  ) {
    super(message)
  }
}

/** A backend of `ctx.lsp`, e.g. local servers over stdio (`@dsh/lsp-stdio`). */
export interface LspProvider {
  /** Whether a server is configured for this file's extension. No I/O: it is asked before every edit. */
  handles(file: string): boolean
  /** The extensions it has servers for (lowercase, with the dot), for messages. */
  extensions(): string[]
  /** Answers the query or throws an `LspError`. */
  query(query: LspQuery): Promise<LspAnswer>
  /** The diagnostics of the files it handles; never throws for a server that fails (those files stay unchecked). */
  diagnostics(request: LspDiagnosticsRequest): Promise<LspDiagnosticsResult>
}

/** The hint every "no provider" answer carries. */
export const NO_PROVIDER_HINT =
  'no language-server provider is loaded: add the @dsh/lsp-stdio row to the profile (the base bundle has it as `lsp-stdio`)'

/**
 * `ctx.lsp`: language-server queries, independent of the backend that
 * answers them, so the `lsp` tool's schema never changes with the provider.
 * Providers register here; the first that handles a file answers for it.
 */
export class Lsp extends Service {
  private readonly providers = new ScopedRegistry<LspProvider>('lsp provider')

  constructor(ctx: Context) {
    super(ctx, 'lsp')
  }

  /** Adds a provider owned by `ctx`'s plugin; removed when that plugin is disposed, or by the disposer. */
  register(ctx: Context, id: string, provider: LspProvider): () => void {
    return this.providers.register(ctx, id, provider)
  }

  /** Whether any provider has a server for the file. Cheap: no I/O, no server started. */
  handles(file: string): boolean {
    return this.providers.values().some((provider) => provider.handles(file))
  }

  /** The extensions some provider has a server for (lowercase, with the dot); empty without providers. No I/O. */
  extensions(): string[] {
    return [...new Set(this.providers.values().flatMap((provider) => provider.extensions()))].sort()
  }

  async query(query: LspQuery): Promise<LspAnswer> {
    return this.providerFor(query.file).query(query)
  }

  /** Diagnostics of the files some provider handles; the others are left out at no cost. */
  async diagnostics(request: LspDiagnosticsRequest): Promise<LspDiagnosticsResult> {
    const byProvider = new Map<LspProvider, string[]>()
    for (const file of request.files) {
      const provider = this.providers.values().find((candidate) => candidate.handles(file))
      if (provider) byProvider.set(provider, [...(byProvider.get(provider) ?? []), file])
    }
    const results = await Promise.all(
      [...byProvider].map(([provider, files]) => provider.diagnostics({ ...request, files })),
    )
    return {
      checked: results.flatMap((result) => result.checked),
      diagnostics: results.flatMap((result) => result.diagnostics),
    }
  }

  private providerFor(file: string): LspProvider {
    const all = this.providers.values()
    if (all.length === 0) throw new LspError('LSP_UNAVAILABLE', NO_PROVIDER_HINT)
    const provider = all.find((candidate) => candidate.handles(file))
    if (provider) return provider
    const known = this.extensions()
    const extension = extname(file).toLowerCase() || '(no extension)'
    throw new LspError(
      'LSP_NO_SERVER',
      `no language server is configured for ${extension} files; servers are configured for ${known.join(' ') || 'nothing'}`,
    )
  }
}
