import { type Context, type JsonValue, Schema } from '@dsh/cordis'
import type { FileDiagnostic } from '@dsh/lsp'
import { diagnosticCounts, formatDiagnostic, shownPath, type ToolExecution, type ToolResult } from '@dsh/tools'

export interface LspDiagnosticsConfig {
  enabled: boolean
  waitMs: number
  warnings: boolean
  maxPerFile: number
}

export const Config: Schema<LspDiagnosticsConfig> = Schema.object({
  enabled: Schema.boolean()
    .default(true)
    .description('Append the language servers’ new errors to the result of every call that wrote files.'),
  waitMs: Schema.natural()
    .default(2_000)
    .description(
      'The longest a result waits for the servers, in milliseconds (a server that is still starting answers a later call).',
    ),
  warnings: Schema.boolean().default(false).description('Report warnings too, not only errors.'),
  maxPerFile: Schema.natural().min(1).default(20).description('Diagnostics listed per file; the rest are counted.'),
})

export const name = 'lsp-diagnostics'
export const inject = ['tools', 'lsp', 'fs']

/**
 * After a successful call whose tool declares that it writes files (`write`,
 * `edit`, any tool with `access: { kind: 'write', paths }`), asks `ctx.lsp`
 * for the errors in those files and appends them to the result, so the model
 * sees a broken edit in the same step. Files no server handles cost nothing.
 */
export function apply(ctx: Context, config: LspDiagnosticsConfig) {
  if (!config.enabled) return
  ctx.on('tools/post-execute', async (execution, _result, next) => {
    const final = await next()
    if (final.isError || execution.run.signal.aborted) return final
    const files = await writtenFiles(ctx, execution)
    if (files.files.length === 0) return final
    const found = await ctx.lsp.diagnostics({
      files: files.files,
      workspace: files.workspace,
      sessionId: execution.run.sessionId,
      waitMs: config.waitMs,
      signal: execution.run.signal,
    })
    if (found.checked.length === 0) return final
    const shown = found.diagnostics.filter(
      (item) => item.severity === 'error' || (config.warnings && item.severity === 'warning'),
    )
    return withDiagnostics(final, shown, render(shown, files.workspace, config.maxPerFile))
  })
}

/** The real paths, inside the workspace and of a language some server handles, that the call wrote. */
async function writtenFiles(ctx: Context, execution: ToolExecution): Promise<{ files: string[]; workspace: string }> {
  let access: ReturnType<NonNullable<ToolExecution['tool']['access']>> | undefined
  try {
    access = execution.tool.access?.(execution.args as never)
  } catch {
    access = undefined
  }
  const none = { files: [], workspace: execution.run.cwd }
  if (access?.kind !== 'write' || !access.paths?.length) return none
  // Checked before any file system work: an edit of a file no server handles costs nothing.
  const candidates = access.paths.filter((path) => ctx.lsp.handles(path))
  if (candidates.length === 0) return none
  const files: string[] = []
  let workspace = execution.run.cwd
  for (const given of candidates) {
    const resolved = await ctx.fs.resolve(given, { cwd: execution.run.cwd }).catch(() => undefined)
    if (!resolved?.insideWorkspace) continue
    workspace = resolved.workspace
    if (!files.includes(resolved.real)) files.push(resolved.real)
  }
  return { files, workspace }
}

/** `path:line:col severity CODE: message` lines, grouped by file; empty when nothing is to be reported. */
export function render(items: FileDiagnostic[], root: string, maxPerFile: number): string {
  if (items.length === 0) return ''
  const lines: string[] = []
  const byFile = new Map<string, FileDiagnostic[]>()
  for (const item of items) byFile.set(item.path, [...(byFile.get(item.path) ?? []), item])
  for (const [file, list] of byFile) {
    const sorted = [...list].sort((a, b) => a.line - b.line || a.character - b.character)
    for (const item of sorted.slice(0, maxPerFile)) lines.push(formatDiagnostic(item, root))
    if (sorted.length > maxPerFile) lines.push(`${shownPath(root, file)}: ${sorted.length - maxPerFile} more`)
  }
  return `Language server diagnostics after this change (${diagnosticCounts(items)}):\n${lines.join('\n')}`
}

/** The result with the report appended to its text and the findings in `meta.diagnostics`. */
function withDiagnostics(result: ToolResult, items: FileDiagnostic[], report: string): ToolResult {
  const meta = result.meta
  const base =
    meta !== null && typeof meta === 'object' && !Array.isArray(meta) ? meta : meta === undefined ? {} : { value: meta }
  const content = report ? [...result.content, { type: 'text' as const, text: `\n\n${report}` }] : result.content
  return {
    ...result,
    content,
    meta: { ...base, diagnostics: items as unknown as JsonValue },
  }
}
