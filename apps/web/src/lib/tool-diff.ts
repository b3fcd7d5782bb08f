import { additionDiff, type FileDiff, parseUnifiedDiff } from './diff.ts'
import { parseArgs, stringArg } from './tool-args.ts'

/**
 * The diff a file tool call shows: an edit's result diff once it ran (else
 * its old and new text), or a write's content as added lines.
 */
export function toolDiff(name: string, rawArgs: unknown, result?: string): FileDiff | undefined {
  const args = parseArgs(rawArgs)
  const path = stringArg(args, 'path', 'file_path')
  if (name === 'edit') {
    const fromResult = result ? parseUnifiedDiff(result) : undefined
    if (fromResult) return fromResult
    const before = stringArg(args, 'old_string')
    const after = typeof args?.new_string === 'string' ? args.new_string : undefined
    if (!path || before === undefined || after === undefined) return undefined
    const removed = before.split('\n')
    const added = after ? after.split('\n') : []
    return {
      path,
      lines: [...removed.map((text) => ({ kind: 'del' as const, text })), ...added.map((text) => ({ kind: 'add' as const, text }))],
      added: added.length,
      removed: removed.length,
    }
  }
  if (name === 'write') {
    const content = typeof args?.content === 'string' ? args.content : undefined
    return path && content !== undefined ? additionDiff(path, content) : undefined
  }
  return undefined
}
