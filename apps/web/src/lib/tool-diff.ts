import type { ToolCallPresentation } from '@dsh/web-client'
import { additionDiff, type FileDiff, parseUnifiedDiff } from './diff.ts'

/**
 * The diff a call of a `diff` tool shows: the unified diff its result holds
 * once it ran, else the change its presentation describes (old text as
 * removed lines, new text as added; a new file all added).
 */
export function toolDiff(presentation: ToolCallPresentation | undefined, result?: string): FileDiff | undefined {
  if (presentation?.view !== 'diff') return undefined
  const fromResult = result ? parseUnifiedDiff(result) : undefined
  if (fromResult) return fromResult
  const change = presentation.change
  if (!change) return undefined
  if (change.oldText === null) return additionDiff(change.path, change.newText)
  const removed = change.oldText.split('\n')
  const added = change.newText ? change.newText.split('\n') : []
  return {
    path: change.path,
    lines: [...removed.map((text) => ({ kind: 'del' as const, text })), ...added.map((text) => ({ kind: 'add' as const, text }))],
    added: added.length,
    removed: removed.length,
  }
}
