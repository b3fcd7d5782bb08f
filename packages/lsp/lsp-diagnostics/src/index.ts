import { type Context, type JsonValue, Schema } from '@dsh/cordis'
import type { FileDiagnostic } from '@dsh/lsp'
import { type ChangeSnapshot, changeSnapshot, changedBetween } from './changes.ts'
import { diagnosticCounts, formatDiagnostic, shownPath, type ToolExecution, type ToolResult } from '@dsh/tools'

export interface LspDiagnosticsConfig {
  enabled: boolean
  waitMs: number
  warnings: boolean
  maxPerFile: number
  afterCommands: boolean
  gitTimeoutMs: number
  maxCommandFiles: number
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
  afterCommands: Schema.boolean()
    .default(false)
    .description(
      'Also after calls that run commands (`bash`): in a git workspace, the files of a server’s languages that the command changed are checked.',
    ),
  gitTimeoutMs: Schema.natural()
    .min(1)
    .default(2_000)
    .description(
      'Each git call that lists what a command changed is killed after this long; the call is then left unchecked.',
    ),
  maxCommandFiles: Schema.natural()
    .min(1)
    .default(20)
    .description('The most files a command changed that are checked; the rest are counted as unchecked.'),
})

export const name = 'lsp-diagnostics'
export const inject = ['tools', 'lsp', 'fs']

/**
 * After a successful call whose tool declares that it writes files (`write`,
 * `edit`, any tool with `access: { kind: 'write', paths }`), asks `ctx.lsp`
 * for the errors in those files and appends them to the result, so the model
 * sees a broken edit in the same step. Files no server handles cost nothing.
 * With `afterCommands`, a call that runs commands (`access.kind: 'execute'`)
 * is bracketed by two git status listings of the servers' extensions, and the
 * files it changed get the same report.
 */
export function apply(ctx: Context, config: LspDiagnosticsConfig) {
  if (!config.enabled) return
  /** What git listed before each command ran, for the calls that may change files a server cares about. */
  const before = new WeakMap<ToolExecution, ChangeSnapshot>()
  if (config.afterCommands) {
    ctx.on('tools/execute', async (execution, next) => {
      const extensions = runsCommands(execution) ? ctx.lsp.extensions() : []
      if (extensions.length === 0) return next()
      const snapshot = await changeSnapshot(execution.run.cwd, extensions, gitOptions(config))
      if (snapshot) before.set(execution, snapshot)
      return next()
    })
  }
  ctx.on('tools/post-execute', async (execution, _result, next) => {
    const final = await next()
    if (execution.run.signal.aborted) return final
    const snapshot = before.get(execution)
    // A command that failed may still have changed files; a write that failed did not.
    if (!snapshot && final.isError) return final
    const files = snapshot ? await commandFiles(ctx, execution, snapshot, config) : await writtenFiles(ctx, execution)
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
    const skipped = files.skipped ? `\n${files.skipped} more changed files were not checked.` : ''
    const report = render(shown, files.workspace, config.maxPerFile)
    return withDiagnostics(final, shown, report && `${report}${skipped}`)
  })
}

interface ChangedFiles {
  files: string[]
  workspace: string
  /** Changed files over the limit, left unchecked. */
  skipped?: number
}

/** Whether the tool runs commands (it declares `execute` access), whatever its name. */
function runsCommands(execution: ToolExecution): boolean {
  try {
    return execution.tool.access?.(execution.args as never)?.kind === 'execute'
  } catch {
    return false
  }
}

function gitOptions(config: LspDiagnosticsConfig) {
  return { timeoutMs: config.gitTimeoutMs, maxBytes: 4 * 1024 * 1024 }
}

/** The files of a server's languages, inside the workspace, that git shows the command changed. */
async function commandFiles(
  ctx: Context,
  execution: ToolExecution,
  before: ChangeSnapshot,
  config: LspDiagnosticsConfig,
): Promise<ChangedFiles> {
  const after = await changeSnapshot(execution.run.cwd, ctx.lsp.extensions(), gitOptions(config))
  if (!after) return { files: [], workspace: execution.run.cwd }
  const changed = (await changedBetween(before, after)).filter((file) => ctx.lsp.handles(file))
  const found = await insideWorkspace(ctx, execution, changed.slice(0, config.maxCommandFiles))
  const skipped = Math.max(0, changed.length - config.maxCommandFiles)
  return skipped ? { ...found, skipped } : found
}

/** The real paths, inside the workspace and of a language some server handles, that the call wrote. */
async function writtenFiles(ctx: Context, execution: ToolExecution): Promise<ChangedFiles> {
  let access: ReturnType<NonNullable<ToolExecution['tool']['access']>> | undefined
  try {
    access = execution.tool.access?.(execution.args as never)
  } catch {
    access = undefined
  }
  if (access?.kind !== 'write' || !access.paths?.length) return { files: [], workspace: execution.run.cwd }
  // Checked before any file system work: an edit of a file no server handles costs nothing.
  return insideWorkspace(
    ctx,
    execution,
    access.paths.filter((path) => ctx.lsp.handles(path)),
  )
}

/** The real paths of the given ones that lie inside the workspace, and that workspace. */
async function insideWorkspace(ctx: Context, execution: ToolExecution, candidates: string[]): Promise<ChangedFiles> {
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
