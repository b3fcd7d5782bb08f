import { type ReadOutcome, readCapped } from './read.ts'

export interface InstructionFile {
  path: string
  /** `user`: the user-wide file; `project`: a file in the project or the workspace. */
  scope: 'user' | 'project'
  /** `omitted`: the total budget was spent before this file. */
  outcome: Exclude<ReadOutcome, { kind: 'missing' }> | { kind: 'omitted'; size?: number }
}

export interface Caps {
  maxFileBytes: number
  maxTotalBytes: number
}

/**
 * Reads the candidates in order (missing ones and repeats dropped), each cut
 * to `maxFileBytes` and all of them together to `maxTotalBytes`.
 */
export function loadInstructions(
  candidates: ReadonlyArray<Omit<InstructionFile, 'outcome'>>,
  caps: Caps,
): InstructionFile[] {
  const seen = new Set<string>()
  const out: InstructionFile[] = []
  let budget = caps.maxTotalBytes
  for (const candidate of candidates) {
    if (seen.has(candidate.path)) continue
    seen.add(candidate.path)
    if (budget <= 0) {
      const probe = readCapped(candidate.path, 0)
      if (probe.kind === 'missing' || (probe.kind === 'text' && probe.size === 0)) continue
      out.push({ ...candidate, outcome: probe.kind === 'text' ? { kind: 'omitted', size: probe.size } : probe })
      continue
    }
    const outcome = readCapped(candidate.path, Math.min(caps.maxFileBytes, budget))
    if (outcome.kind === 'missing') continue
    if (outcome.kind === 'text') {
      if (!outcome.text.trim()) continue
      budget -= outcome.shown
    }
    out.push({ ...candidate, outcome })
  }
  return out
}

/** The system-prompt section for the loaded files; undefined when there are none. */
export function renderInstructions(files: readonly InstructionFile[]): string | undefined {
  if (files.length === 0) return undefined
  const blocks = files.map((file) => {
    const { outcome } = file
    let body: string
    switch (outcome.kind) {
      case 'text':
        body = outcome.text.trimEnd()
        if (outcome.cut)
          body += `\n[cut: this file has ${outcome.size} bytes; only the first ${outcome.shown} are shown]`
        break
      case 'unreadable':
        body = `[not loaded: ${outcome.why}]`
        break
      case 'omitted':
        body = `[not loaded: the size limit for all instruction files together was reached before this file${outcome.size ? ` (${outcome.size} bytes)` : ''}]`
        break
    }
    return `<agents-md path="${file.path}" scope="${file.scope}">\n${body}\n</agents-md>`
  })
  return [
    '# Instructions from AGENTS.md files',
    'These files hold instructions from the user and the project. Follow them. They are listed from the most general to the most specific; where they disagree, the more specific (later) file wins.',
    ...blocks,
  ].join('\n\n')
}
