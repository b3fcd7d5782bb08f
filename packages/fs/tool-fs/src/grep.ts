import type { Context } from '@dsh/cordis'
import { callTarget, defineTool, textArgument, ToolError, type ToolOutput, type ToolRunContext } from '@dsh/tools'
import { z } from 'zod'
import type { FsToolsConfig } from './config.ts'
import { MAX_PATH_LENGTH } from './files.ts'
import { MAX_PATTERN_LENGTH } from './glob.ts'
import {
  cutFooter,
  nullSeparated,
  type RgOutcome,
  rgFailure,
  ripgrepIn,
  type SearchRoot,
  searchRoot,
} from './ripgrep.ts'

type OutputMode = 'content' | 'files_with_matches' | 'count'

/** One line of `content` output: a match (`12:text`), a context line (`13-text`) or a break between distant groups (`--`). */
interface Line {
  text: string
  /** Counts against head_limit (breaks and headings do not). */
  counts: boolean
}

interface FileBlock {
  path: string
  lines: Line[]
}

export function grepTool(ctx: Context, config: FsToolsConfig) {
  return defineTool({
    name: 'grep',
    presentation: {
      kind: 'search',
      view: 'search',
      title: (args, shown) => {
        const target = callTarget(args)
        return `Search ${JSON.stringify(textArgument(args, 'pattern') ?? '')}${target ? ` in ${shown(target)}` : ''}`
      },
    },
    description:
      'Search file contents with a regular expression (ripgrep, Rust regex syntax: escape literal braces and parentheses, e.g. `interface\\{\\}`). ' +
      'Searches the workspace, or `path` (a file or directory); files excluded by .gitignore and binary files are skipped. ' +
      'Filter files with `glob` (e.g. `*.ts`, `src/**/*.{js,jsx}`) or `type` (a ripgrep file type: js, ts, py, rust, go, java, ...). ' +
      '`output_mode`: `files_with_matches` (default) lists matching files; `content` shows matching lines with line numbers ' +
      '(`path` heading, then `N:line`, context lines as `N-line`); `count` gives matching lines per file. ' +
      `Shows the first ${config.grepMaxResults} results unless head_limit says otherwise.`,
    parameters: z.object({
      pattern: z.string().min(1).max(MAX_PATTERN_LENGTH).describe('The regular expression to search for.'),
      path: z
        .string()
        .min(1)
        .max(MAX_PATH_LENGTH)
        .optional()
        .describe('File or directory to search. Default: the workspace.'),
      glob: z
        .string()
        .min(1)
        .max(MAX_PATTERN_LENGTH)
        .optional()
        .describe('Only search files matching this glob, e.g. `*.ts` or `src/**/*.py`.'),
      type: z
        .string()
        .regex(/^[A-Za-z0-9][A-Za-z0-9_+-]{0,31}$/, 'a ripgrep file type name such as js, ts, py, rust')
        .optional()
        .describe('Only search files of this ripgrep type, e.g. `ts`, `py`, `rust`.'),
      case_insensitive: z.boolean().optional().describe('Match without regard to case. Default false.'),
      context: z
        .number()
        .int()
        .min(0)
        .max(config.grepMaxContext)
        .optional()
        .describe('Lines of context before and after each match (content mode only).'),
      output_mode: z
        .enum(['content', 'files_with_matches', 'count'])
        .optional()
        .describe('What to show. Default files_with_matches.'),
      head_limit: z
        .number()
        .int()
        .min(1)
        .max(config.grepMaxHeadLimit)
        .optional()
        .describe(`Show at most this many result lines, files or counts. Default ${config.grepMaxResults}.`),
    }),
    readOnly: true,
    isConcurrencySafe: () => true,
    timeoutMs: config.searchTimeoutMs,
    access: (args) => ({ kind: 'read', paths: [args.path ?? '.'], summary: `grep ${args.pattern}` }),
    async execute(args, run): Promise<ToolOutput> {
      const mode: OutputMode = args.output_mode ?? 'files_with_matches'
      if (args.context !== undefined && mode !== 'content') {
        throw new ToolError(
          'INVALID_ARGUMENTS',
          'context only applies to output_mode "content"; drop it or set output_mode to "content".',
        )
      }
      // A NUL byte cannot pass through a process argument.
      if (args.pattern.includes('\0'))
        throw new ToolError('SEARCH_INVALID_PATTERN', 'the pattern contains a NUL byte; use \\x00 to match one.')
      if (args.glob?.includes('\0')) throw new ToolError('SEARCH_INVALID_GLOB', 'the glob contains a NUL byte.')
      const root = await searchRoot(ctx, args.path ?? '.', run, false)
      const rgArgs: string[] = ['--hidden', '--no-require-git', '--glob=!.git', '--with-filename']
      if (args.case_insensitive) rgArgs.push('--ignore-case')
      if (args.glob !== undefined) rgArgs.push(`--glob=${args.glob}`)
      if (args.type !== undefined) rgArgs.push(`--type=${args.type}`)
      if (mode === 'content') {
        rgArgs.push('--json')
        if (args.context) rgArgs.push(`--context=${args.context}`)
      } else {
        rgArgs.push(mode === 'count' ? '--count' : '--files-with-matches', '--null')
      }
      rgArgs.push('--regexp', args.pattern)
      const outcome = await ripgrepIn(root, rgArgs, { signal: run.signal, maxOutputBytes: config.searchMaxOutputBytes })
      const limit = args.head_limit ?? config.grepMaxResults
      const base = { ctx, run, root, outcome, limit, config }
      if (mode === 'content') return content(base, parseJson(outcome, root))
      return listing(base, mode)
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
        `(ripgrep's output passed ${base.config.searchMaxOutputBytes} bytes, so the search was stopped and the results are incomplete. Narrow the pattern, path or glob.)`,
      ]
    : []
}

async function listing(base: Base, mode: 'files_with_matches' | 'count'): Promise<ToolOutput> {
  const { stdout, overflow } = base.outcome
  const printed: { path: string; count: number }[] = []
  if (mode === 'count') {
    // `--count --null` prints `path\0count\n` per file; an entry cut short by an overflow is dropped.
    const text = stdout.toString('utf8')
    const complete = overflow || text === '' || text.endsWith('\n') ? text : `${text}\n`
    const pattern = /([^\0]*)\0(\d+)\n/g
    for (let match = pattern.exec(complete); match; match = pattern.exec(complete))
      printed.push({ path: match[1] as string, count: Number(match[2]) })
  } else {
    for (const record of nullSeparated(stdout, overflow)) if (record !== '') printed.push({ path: record, count: 0 })
  }
  // A file on the deny-read list never shows, not even by name.
  const entries = printed.filter((entry) => base.root.allowed(entry.path))
  const notes = problems(base.outcome, entries.length)
  const shown = entries
    .map((entry) => ({ ...entry, path: base.root.show(entry.path) }))
    .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
  const totalMatches = shown.reduce((sum, entry) => sum + entry.count, 0)
  const meta = {
    mode,
    files: shown.length,
    matches: mode === 'count' ? totalMatches : null,
    truncated: false,
    spilled: null as string | null,
  }
  if (shown.length === 0) return { content: ['No matches found', ...notes, ...overflowNote(base)].join('\n\n'), meta }

  const render = (entry: { path: string; count: number }) =>
    mode === 'count' ? `${entry.path}:${entry.count}` : entry.path
  const lines = shown.map(render)
  let body = lines.slice(0, base.limit)
  if (lines.length > base.limit) {
    notes.unshift(
      await cutFooter(base.ctx, base.run, meta, {
        full: lines.join('\n'),
        label: `grep-${mode === 'count' ? 'count' : 'files'}`,
        shown: body.length,
        total: lines.length,
        noun: 'files',
        narrow: 'Narrow the pattern, path or glob to see the rest.',
      }),
    )
  }
  if (mode === 'count') notes.unshift(`(${totalMatches} matching lines in ${shown.length} files.)`)
  body = [body.join('\n'), ...notes, ...overflowNote(base)]
  return { content: body.join('\n\n'), meta }
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
  const meta = { mode: 'content', files: blocks.length, matches, truncated: false, spilled: null as string | null }
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
        narrow: 'Narrow the pattern, path or glob, or raise head_limit, to see the rest.',
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
