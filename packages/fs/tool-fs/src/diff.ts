import { structuredPatch } from 'diff'

/** One replacement made by an edit: `oldLength` characters at `start` in the old text became `newLength` characters. */
export interface Replacement {
  start: number
  oldLength: number
  newLength: number
}

export interface DiffOptions {
  context: number
  maxLines: number
}

/** A changed stretch of lines: old lines [oldFrom, oldTo) became new lines [newFrom, newTo). */
interface Block {
  oldFrom: number
  oldTo: number
  newFrom: number
  newTo: number
}

/**
 * A unified-style diff of an edit. The replacements are known, so each one
 * maps straight to the lines it touched; no general diff search is needed.
 */
export function editDiff(
  label: string,
  before: string,
  after: string,
  replacements: readonly Replacement[],
  options: DiffOptions,
): string {
  const oldLines = splitLines(before)
  const newLines = splitLines(after)
  const oldStarts = lineStarts(before)
  const newStarts = lineStarts(after)

  const blocks: Block[] = []
  let shift = 0
  for (const r of replacements) {
    const newStart = r.start + shift
    shift += r.newLength - r.oldLength
    const block: Block = {
      oldFrom: lineAt(oldStarts, r.start),
      oldTo: Math.min(lineAt(oldStarts, r.start + r.oldLength) + 1, oldLines.length),
      newFrom: lineAt(newStarts, newStart),
      newTo: Math.min(lineAt(newStarts, newStart + r.newLength) + 1, newLines.length),
    }
    const last = blocks[blocks.length - 1]
    if (last && block.oldFrom < last.oldTo) {
      last.oldTo = Math.max(last.oldTo, block.oldTo)
      last.newTo = Math.max(last.newTo, block.newTo)
    } else {
      blocks.push(block)
    }
  }
  const changed = blocks
    .map((block) => trim(block, oldLines, newLines))
    .filter((b) => b.oldFrom < b.oldTo || b.newFrom < b.newTo)
  if (changed.length === 0) return `--- ${label}\n+++ ${label}\n(no line changed)`

  const out = [`--- ${label}`, `+++ ${label}`]
  const { context } = options
  let i = 0
  while (i < changed.length) {
    let j = i
    while (j + 1 < changed.length && changed[j + 1]!.oldFrom - changed[j]!.oldTo <= 2 * context) j += 1
    const first = changed[i]!
    const lastBlock = changed[j]!
    const oldStart = Math.max(0, first.oldFrom - context)
    const oldEnd = Math.min(oldLines.length, lastBlock.oldTo + context)
    const newStart = first.newFrom - (first.oldFrom - oldStart)
    const newEnd = lastBlock.newTo + (oldEnd - lastBlock.oldTo)
    out.push(`@@ -${range(oldStart, oldEnd)} +${range(newStart, newEnd)} @@`)
    let cursor = oldStart
    for (let k = i; k <= j; k += 1) {
      const block = changed[k]!
      for (; cursor < block.oldFrom; cursor += 1) out.push(` ${oldLines[cursor]}`)
      for (let n = block.oldFrom; n < block.oldTo; n += 1) out.push(`-${oldLines[n]}`)
      for (let n = block.newFrom; n < block.newTo; n += 1) out.push(`+${newLines[n]}`)
      cursor = block.oldTo
    }
    for (; cursor < oldEnd; cursor += 1) out.push(` ${oldLines[cursor]}`)
    i = j + 1
  }
  return capped(out, options.maxLines)
}

/**
 * A unified-style diff of a whole-file replacement (`write` over a file):
 * nothing says which lines changed, so jsdiff searches for them.
 */
export function replacementDiff(label: string, before: string, after: string, options: DiffOptions): string {
  const patch = structuredPatch(label, label, before, after, undefined, undefined, { context: options.context })
  if (patch.hunks.length === 0) return `--- ${label}\n+++ ${label}\n(no line changed)`
  const out = [`--- ${label}`, `+++ ${label}`]
  for (const hunk of patch.hunks) {
    out.push(`@@ -${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@`, ...hunk.lines)
  }
  return capped(out, options.maxLines)
}

/** The diff lines, the ones past `maxLines` replaced by a count. */
function capped(lines: readonly string[], maxLines: number): string {
  if (lines.length <= maxLines) return lines.join('\n')
  const hidden = lines.length - maxLines
  return [...lines.slice(0, maxLines), `… (${hidden} more diff lines not shown)`].join('\n')
}

/** Drops the unchanged lines at both ends of a block. */
function trim(block: Block, oldLines: readonly string[], newLines: readonly string[]): Block {
  let { oldFrom, oldTo, newFrom, newTo } = block
  while (oldFrom < oldTo && newFrom < newTo && oldLines[oldFrom] === newLines[newFrom]) {
    oldFrom += 1
    newFrom += 1
  }
  while (oldFrom < oldTo && newFrom < newTo && oldLines[oldTo - 1] === newLines[newTo - 1]) {
    oldTo -= 1
    newTo -= 1
  }
  return { oldFrom, oldTo, newFrom, newTo }
}

/** `start,count` with 1-based start, as unified diffs write it (an empty range names the line before it). */
function range(from: number, to: number): string {
  const count = to - from
  return `${count === 0 ? from : from + 1},${count}`
}

/** The lines of a text; a final newline does not start another line. */
function splitLines(text: string): string[] {
  const lines = text.split('\n')
  if (lines[lines.length - 1] === '') lines.pop()
  return lines.map((line) => (line.endsWith('\r') ? line.slice(0, -1) : line))
}

function lineStarts(text: string): number[] {
  const starts = [0]
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) starts.push(i + 1)
  return starts
}

/** The index of the line holding character `position`. */
function lineAt(starts: readonly number[], position: number): number {
  let low = 0
  let high = starts.length - 1
  while (low < high) {
    const mid = (low + high + 1) >> 1
    if (starts[mid]! <= position) low = mid
    else high = mid - 1
  }
  return low
}
