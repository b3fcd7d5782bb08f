import type { ContentBlock } from '@dsh/wire-types'
import { resultDiagnostics } from '@dsh/wire-types'
import { diagnosticCounts, formatDiagnostic } from './describe.ts'
import type { FileChange, ToolCallPresentation } from './types.ts'

/** How a finished call shows, whatever the surface: each renders it in its own shape. */
export interface ToolResultView {
  /** The text blocks of the result, joined by newlines (empty when it has none). */
  text: string
  /** Show `text` as code in this language (`console` for a terminal tool, `''` for a read tool); only on success. */
  code?: string
  images: Array<{ mediaType: string; data: string }>
  /** A successful `diff` call whose result's `meta.oldText` holds the text it replaced: the change with that old text. */
  change?: FileChange
  /** A successful `diff` call's language-server findings: the counts, then one line per finding. */
  diagnostics?: string
}

/**
 * The view of a finished call from its call's presentation (`present` of the
 * call) and its result: the content blocks, whether it failed, and its `meta`
 * (`oldText` of a `write` over a file, `diagnostics` of an edit).
 */
export function presentResult(
  call: ToolCallPresentation,
  result: { content: readonly ContentBlock[]; failed: boolean; meta?: unknown },
  cwd: string,
): ToolResultView {
  const text = result.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('\n')
  const images = result.content.flatMap((b) => (b.type === 'image' ? [{ mediaType: b.mediaType, data: b.data }] : []))
  const view: ToolResultView = { text, images }
  if (result.failed) return view
  if (call.view === 'terminal') view.code = 'console'
  if (call.view === 'read') view.code = ''
  if (call.view !== 'diff') return view
  const oldText = (result.meta as { oldText?: unknown } | undefined)?.oldText
  if (typeof oldText === 'string' && call.change) view.change = { ...call.change, oldText }
  const found = resultDiagnostics(result.meta)
  if (found?.length)
    view.diagnostics = [
      `Language server: ${diagnosticCounts(found)}`,
      ...found.map((d) => formatDiagnostic(d, cwd)),
    ].join('\n')
  return view
}

/**
 * A Markdown code block of `body` in `language` (a result view's `code`), with
 * a fence longer than any run of backticks inside it.
 */
export function codeFence(body: string, language: string): string {
  const longest = Math.max(0, ...Array.from(body.matchAll(/`+/g), (m) => m[0].length))
  const marks = '`'.repeat(Math.max(3, longest + 1))
  return `${marks}${language}\n${body.replace(/\n$/, '')}\n${marks}`
}
