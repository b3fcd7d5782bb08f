import type { Context } from '@dsh/cordis'
import { defineTool, textArgument, ToolError, type ToolOutput, type ToolRunContext, toolParameters } from '@dsh/tools'
import { searchTitle } from './presentation.ts'
import { z } from 'zod'
import type { FsToolsConfig } from './config.ts'
import { MAX_PATH_LENGTH } from './files.ts'
import { MAX_PATTERN_LENGTH } from './glob.ts'
import {
  cutFooter,
  type RgOutcome,
  rgFailure,
  ripgrepIn,
  type SearchRoot,
  searchRoot,
  searchTraits,
} from './ripgrep.ts'

/** One line of output: a match (`12:text`) or a break between distant matches (`--`). */
interface Line {
  text: string
  /** Counts against the limit (breaks and headings do not). */
  counts: boolean
}

interface FileBlock {
  path: string
  lines: Line[]
}

const grepParameters = toolParameters(
  z.object({
    pattern: z.string().min(1).max(MAX_PATTERN_LENGTH).describe('The regular expression to search for.'),
    path: z
      .string()
      .min(1)
      .max(MAX_PATH_LENGTH)
      .optional()
      .describe('File or directory to search. Default: the workspace.'),
    include: z
      .string()
      .min(1)
      .max(MAX_PATTERN_LENGTH)
      .optional()
      .describe('Only search files matching this one glob, e.g. `*.ts` or `src/**/*.py`.'),
  }),
)

export function grepTool(ctx: Context, config: FsToolsConfig) {
  return defineTool({
    name: 'grep',
    presentation: {
      kind: 'search',
      view: 'search',
      title: searchTitle((args) => `Search ${JSON.stringify(textArgument(args, 'pattern') ?? '')}`),
    },
    description:
      'Search file contents with a regular expression (ripgrep, Rust regex syntax: escape literal braces and parentheses, e.g. `interface\\{\\}`). ' +
      'Searches the workspace, or `path` (a file or directory); files excluded by .gitignore and binary files are skipped. ' +
      'Narrow the files with `include`, one glob such as `*.ts` or `*.{js,jsx}`. ' +
      'Returns the matching lines with their line numbers, grouped under a heading per file. ' +
      `Shows the first ${config.grepMaxResults} matching lines; to see the lines around a match, read that file.`,
    parameters: grepParameters,
    ...searchTraits(config, 'grep'),
    async execute(args, run): Promise<ToolOutput> {
      // A NUL byte cannot pass through a process argument.
      if (args.pattern.includes('\0'))
        throw new ToolError('SEARCH_INVALID_PATTERN', 'the pattern contains a NUL byte; use \\x00 to match one.')
      if (args.include?.includes('\0'))
        throw new ToolError('SEARCH_INVALID_GLOB', 'the include glob contains a NUL byte.')
      const root = await searchRoot(ctx, args.path ?? '.', run, false)
      const rgArgs: string[] = ['--hidden', '--no-require-git', '--glob=!.git', '--with-filename', '--json']
      if (args.include !== undefined) rgArgs.push(`--glob=${args.include}`)
      rgArgs.push('--regexp', args.pattern)
      const outcome = await ripgrepIn(root, rgArgs, { signal: run.signal, maxOutputBytes: config.searchMaxOutputBytes })
      return content({ ctx, run, root, outcome, limit: config.grepMaxResults, config }, parseJson(outcome, root))
    },
  })
}

interface Base {
  ctx: Context
  run: ToolRunContext
  root: SearchRoot
  outcome: RgOutcome
  limit: number
  config: FsToolsConfig
}

/** Fails the call when rg failed and found nothing; otherwise lists rg's warnings (unreadable files) for the footer. */
function problems(outcome: RgOutcome, found: number): string[] {
  if (outcome.code !== 0 && outcome.code !== 1 && found === 0 && !outcome.overflow) throw rgFailure(outcome, 'pattern')
  const notes: string[] = []
  if (outcome.code === 2 && outcome.stderr.trim() !== '') {
    const lines = outcome.stderr.trim().split('\n')
    notes.push(
      `(Some files could not be searched: ${lines
        .slice(0, 3)
        .map((line) => line.replace(/^rg: /, ''))
        .join('; ')}${lines.length > 3 ? `; and ${lines.length - 3} more` : ''}.)`,
    )
  }
  return notes
}

function overflowNote(base: Base): string[] {
  return base.outcome.overflow
    ? [
        `(ripgrep's output passed ${base.config.searchMaxOutputBytes} bytes, so the search was stopped and the results are incomplete. Narrow the pattern, path or include glob.)`,
      ]
    : []
}

async function content(base: Base, blocks: FileBlock[]): Promise<ToolOutput> {
  const notes = problems(base.outcome, blocks.length)
  const maxLength = base.config.grepMaxLineLength
  const cut = (text: string) =>
    text.length > maxLength ? `${text.slice(0, maxLength)}… [line cut at ${maxLength} characters]` : text
  blocks.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
  const matches = blocks.reduce(
    (sum, block) => sum + block.lines.filter((line) => line.counts && /^\d+:/.test(line.text)).length,
    0,
  )
  const meta = { files: blocks.length, matches, truncated: false, spilled: null as string | null }
  if (blocks.length === 0) return { content: ['No matches found', ...notes, ...overflowNote(base)].join('\n\n'), meta }

  const full: string[] = []
  const shown: string[] = []
  let counted = 0
  let total = 0
  for (const block of blocks) {
    const heading = [...(full.length ? [''] : []), block.path]
    full.push(...heading)
    if (counted < base.limit) shown.push(...heading)
    for (const line of block.lines) {
      const text = cut(line.text)
      full.push(text)
      if (line.counts) total += 1
      if (counted < base.limit) {
        shown.push(text)
        if (line.counts) counted += 1
      }
    }
  }
  // A trailing break or heading left behind by the cut carries nothing.
  while (shown.length > 0 && (shown[shown.length - 1] === '--' || shown[shown.length - 1] === '')) shown.pop()

  if (total > counted) {
    notes.unshift(
      await cutFooter(base.ctx, base.run, meta, {
        full: full.join('\n'),
        label: 'grep',
        shown: counted,
        total,
        noun: 'result lines',
        narrow: 'Narrow the pattern, path or include glob to see the rest.',
      }),
    )
  }
  return { content: [shown.join('\n'), ...notes, ...overflowNote(base)].join('\n\n'), meta }
}

interface RgText {
  text?: string
  bytes?: string
}

function textOf(value: RgText | undefined): string {
  if (!value) return ''
  if (typeof value.text === 'string') return value.text
  if (typeof value.bytes === 'string') return Buffer.from(value.bytes, 'base64').toString('utf8')
  return ''
}

/** Groups rg's `--json` events by file (rg prints each file's events together). A line cut by an overflow is dropped. */
function parseJson(outcome: RgOutcome, root: SearchRoot): FileBlock[] {
  const blocks = new Map<string, FileBlock>()
  const last = new Map<string, number>()
  const text = outcome.stdout.toString('utf8')
  const records = text.split('\n')
  if (outcome.overflow || !text.endsWith('\n')) records.pop()
  for (const record of records) {
    if (record === '') continue
    let event: { type?: string; data?: { path?: RgText; lines?: RgText; line_number?: number } }
    try {
      event = JSON.parse(record) as typeof event
    } catch {
      continue
    }
    if (event.type !== 'match' && event.type !== 'context') continue
    const data = event.data
    if (!data?.path) continue
    const file = textOf(data.path)
    if (!root.allowed(file)) continue
    let block = blocks.get(file)
    if (!block) {
      block = { path: root.show(file), lines: [] }
      blocks.set(file, block)
    }
    const number = data.line_number ?? 0
    const previous = last.get(file)
    if (previous !== undefined && number > previous + 1) block.lines.push({ text: '--', counts: false })
    last.set(file, number)
    // rg reports a multi-line match as one event; show each of its lines.
    const lines = textOf(data.lines)
      .replace(/\r?\n$/, '')
      .split(/\r?\n/)
    lines.forEach((line, i) => {
      block.lines.push({ text: `${number + i}${event.type === 'match' ? ':' : '-'}${line}`, counts: true })
    })
    if (lines.length > 1) last.set(file, number + lines.length - 1)
  }
  // Files whose events held only context cannot happen, but keep only files with a match.
  return [...blocks.values()].filter((block) => block.lines.some((line) => /^\d+:/.test(line.text)))
}
