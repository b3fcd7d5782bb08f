export interface DiffLine {
  kind: 'add' | 'del' | 'context' | 'hunk' | 'note'
  text: string
  oldNo?: number
  newNo?: number
}

export interface FileDiff {
  path: string
  lines: DiffLine[]
  added: number
  removed: number
}

/** The first unified diff found in a text (from its `--- ` line on), with line numbers; undefined when there is none. */
export function parseUnifiedDiff(text: string): FileDiff | undefined {
  const all = text.split('\n')
  const start = all.findIndex((line, i) => line.startsWith('--- ') && all[i + 1]?.startsWith('+++ '))
  if (start < 0) return undefined
  const path = (all[start + 1] as string).slice(4).trim()
  const lines: DiffLine[] = []
  let oldNo = 0
  let newNo = 0
  let added = 0
  let removed = 0
  for (const line of all.slice(start + 2)) {
    // Inside a diff even an empty source line has its prefix: an empty line ends it (what follows, such as a
    // language server's report, is the result's own text).
    if (line === '') break
    const hunk = line.match(/^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/)
    if (hunk) {
      oldNo = Number(hunk[1])
      newNo = Number(hunk[2])
      lines.push({ kind: 'hunk', text: line })
    } else if (line.startsWith('+')) {
      lines.push({ kind: 'add', text: line.slice(1), newNo: newNo++ })
      added += 1
    } else if (line.startsWith('-')) {
      lines.push({ kind: 'del', text: line.slice(1), oldNo: oldNo++ })
      removed += 1
    } else if (line.startsWith(' ')) {
      lines.push({ kind: 'context', text: line.slice(1), oldNo: oldNo++, newNo: newNo++ })
    } else if (line.trim()) {
      lines.push({ kind: 'note', text: line })
    }
  }
  return { path, lines, added, removed }
}

/** A whole new file shown as added lines (what `write` produced). */
export function additionDiff(path: string, content: string): FileDiff {
  const text = content.endsWith('\n') ? content.slice(0, -1) : content
  const body = text === '' ? [] : text.split('\n')
  const lines: DiffLine[] = [{ kind: 'hunk', text: `@@ -0,0 +1,${body.length} @@` }]
  body.forEach((line, i) => lines.push({ kind: 'add', text: line, newNo: i + 1 }))
  return { path, lines, added: body.length, removed: 0 }
}
