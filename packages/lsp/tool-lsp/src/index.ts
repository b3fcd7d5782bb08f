import { type Context, Schema } from '@dsh/cordis'
import { LSP_OPERATIONS, type LspAnswer, LspError, type LspLocation, type LspOperation } from '@dsh/lsp'
import { type CutMeta, cutFooter, toolErrorOf } from '@dsh/tool-fs'
import {
  callTarget,
  defineTool,
  shownPath,
  textArgument,
  ToolError,
  type ToolOutput,
  type ToolRunContext,
  toolParameters,
} from '@dsh/tools'
import { z } from 'zod'

export interface ToolLspConfig {
  maxLocations: number
  maxResultChars: number
  timeoutMs: number
  maxFileBytes: number
  maxContextChars: number
}

export const Config: Schema<ToolLspConfig> = Schema.object({
  maxLocations: Schema.natural()
    .min(1)
    .default(100)
    .description('Locations shown in a result; the full list is spilled to a file beyond that.'),
  maxResultChars: Schema.natural()
    .min(200)
    .default(16_000)
    .description('The longest result text; a longer one is cut and the full text spilled.'),
  timeoutMs: Schema.natural().min(1).default(60_000).description('Time limit of one call, in milliseconds.'),
  maxFileBytes: Schema.natural()
    .min(1)
    .default(4_000_000)
    .description('The largest file the tool reads to check a position and show context lines.'),
  maxContextChars: Schema.natural()
    .min(10)
    .default(200)
    .description('The longest line of context shown after a location.'),
})

export const name = 'tool-lsp'
export const inject = ['tools', 'lsp', 'fs']

const NOUNS: Record<Exclude<LspOperation, 'hover'>, [string, string]> = {
  goToDefinition: ['definition', 'definitions'],
  findReferences: ['reference', 'references'],
  goToImplementation: ['implementation', 'implementations'],
}

const lspParameters = toolParameters(
  z.object({
    operation: z.enum(LSP_OPERATIONS).describe('goToDefinition, findReferences, goToImplementation, or hover.'),
    file_path: z.string().describe('The source file to query, relative to the workspace or absolute.'),
    line: z.number().describe('One-based line of the cursor.'),
    character: z.number().describe('One-based UTF-16 column of the cursor.'),
  }),
)

/** Registers `lsp`: definitions, references, implementations and hovers from `ctx.lsp`. */
export function apply(ctx: Context, config: ToolLspConfig) {
  ctx.tools.register(
    ctx,
    defineTool({
      name: 'lsp',
      description:
        'Query a language server to navigate code precisely. operation is goToDefinition, findReferences, ' +
        'goToImplementation or hover. line and character are the one-based UTF-16 cursor position. ' +
        'findReferences includes the declaration.',
      parameters: lspParameters,
      readOnly: true,
      isConcurrencySafe: () => true,
      timeoutMs: config.timeoutMs,
      access: (args) => ({ kind: 'read', paths: [args.file_path], summary: `${args.operation} in ${args.file_path}` }),
      presentation: {
        kind: 'search',
        view: 'search',
        title: (args, shown) => {
          const target = callTarget(args)
          const operation = textArgument(args, 'operation') ?? 'lsp'
          const at =
            typeof args.line === 'number'
              ? `:${args.line}${typeof args.character === 'number' ? `:${args.character}` : ''}`
              : ''
          return target ? `LSP ${operation} ${shown(target)}${at}` : `LSP ${operation}`
        },
      },
      execute: (args, run) => query(ctx, config, args, run),
    }),
  )
}

async function query(
  ctx: Context,
  config: ToolLspConfig,
  args: { operation: LspOperation; file_path: string; line: number; character: number },
  run: ToolRunContext,
): Promise<ToolOutput> {
  for (const field of ['line', 'character'] as const) {
    if (!Number.isInteger(args[field]) || args[field] < 1)
      throw new ToolError('INVALID_ARGUMENTS', `${field} must be a whole number from 1, not ${args[field]}`)
  }
  let shown = shownPath(run.cwd, args.file_path)
  const resolved = await ctx.fs.resolve(args.file_path, { cwd: run.cwd }).catch((error: unknown) => {
    throw toolErrorOf(error, shown, run.signal)
  })
  if (!resolved.insideWorkspace) {
    throw new ToolError(
      'LSP_OUTSIDE_WORKSPACE',
      `${shown} is outside the workspace ${run.cwd}; language servers only see files inside it.`,
    )
  }
  shown = shownPath(run.cwd, resolved.absolute)
  let text: string
  try {
    const data = await ctx.fs.readFile(resolved.absolute, {
      cwd: run.cwd,
      sessionId: run.sessionId,
      signal: run.signal,
      maxBytes: config.maxFileBytes,
      expectReal: resolved.real,
    })
    text = data.toString('utf8')
  } catch (error) {
    throw toolErrorOf(error, shown, run.signal)
  }
  const lines = text.split(/\r\n|\r|\n/)
  if (args.line > lines.length) {
    throw new ToolError(
      'LSP_BAD_POSITION',
      `line ${args.line} is past the end of ${shown}, which has ${lines.length} line${lines.length === 1 ? '' : 's'}.`,
    )
  }
  const lineText = lines[args.line - 1] as string
  if (args.character > lineText.length + 1) {
    throw new ToolError(
      'LSP_BAD_POSITION',
      `character ${args.character} is past the end of line ${args.line} of ${shown}, which has ${lineText.length} characters (the last position is ${lineText.length + 1}).`,
    )
  }
  let answer: LspAnswer
  try {
    answer = await ctx.lsp.query({
      operation: args.operation,
      file: resolved.real,
      position: { line: args.line - 1, character: args.character - 1 },
      workspace: resolved.workspace,
      sessionId: run.sessionId,
      signal: run.signal,
    })
  } catch (error) {
    if (error instanceof LspError) throw new ToolError(error.code, error.message)
    throw error
  }
  const at = `${shown}:${args.line}:${args.character}`
  const notes = answer.notes.map((note) => `[note: ${note}]`)
  if (answer.kind === 'hover') {
    const body = answer.markdown ?? `No hover information at ${at}.`
    return finish(ctx, config, run, [body, ...notes].join('\n\n'), {
      operation: args.operation,
      found: answer.markdown !== null ? 1 : 0,
    })
  }
  const operation = args.operation as Exclude<LspOperation, 'hover'>
  const [one, many] = NOUNS[operation]
  const locations = unique(answer.locations)
  const meta = { operation: args.operation, found: locations.length, truncated: false, spilled: null as string | null }
  if (locations.length === 0) return { content: [`No ${one} found at ${at}.`, ...notes].join('\n\n'), meta }
  const rendered = await renderLocations(ctx, config, run, resolved.workspace, locations)
  const heading = `${locations.length} ${locations.length === 1 ? one : many} of the symbol at ${at}:`
  const shownLines = rendered.slice(0, config.maxLocations)
  const footer: string[] = []
  if (rendered.length > shownLines.length) {
    footer.push(
      await cutFooter(ctx, run, meta, {
        full: rendered.join('\n'),
        label: 'lsp',
        shown: shownLines.length,
        total: rendered.length,
        noun: many,
        narrow: 'Query a more specific symbol to see fewer.',
      }),
    )
  }
  return finish(ctx, config, run, [[heading, ...shownLines].join('\n'), ...footer, ...notes].join('\n\n'), meta)
}

/** Cuts a text longer than `maxResultChars`, spilling the whole of it like grep does. */
async function finish(
  ctx: Context,
  config: ToolLspConfig,
  run: ToolRunContext,
  content: string,
  meta: Record<string, string | number | boolean | null>,
): Promise<ToolOutput> {
  if (content.length <= config.maxResultChars) return { content, meta }
  const cut = { truncated: false, spilled: null } as CutMeta
  const budget = config.maxResultChars - 400
  const kept = content.slice(0, budget)
  const footer = await cutFooter(ctx, run, cut, {
    full: content,
    label: 'lsp',
    shown: kept.length,
    total: content.length,
    noun: 'characters',
    narrow: 'Query a more specific position to see less.',
  })
  return { content: `${kept}\n\n${footer}`, meta: { ...meta, truncated: true, spilled: cut.spilled } }
}

function unique(locations: LspLocation[]): LspLocation[] {
  const seen = new Set<string>()
  return locations.filter((location) => {
    const key = `${location.file}\0${location.range.start.line}\0${location.range.start.character}`
    if (seen.has(key)) return false
    seen.add(key)
    return true
  })
}

/** `path:line:col` (1-based, relative inside the workspace) and the line's text, each file read once. */
async function renderLocations(
  ctx: Context,
  config: ToolLspConfig,
  run: ToolRunContext,
  root: string,
  locations: LspLocation[],
): Promise<string[]> {
  const files = new Map<string, Promise<string[] | undefined>>()
  const linesOf = (file: string) => {
    let pending = files.get(file)
    if (!pending) {
      pending = ctx.fs
        .readFile(file, { cwd: run.cwd, sessionId: run.sessionId, signal: run.signal, maxBytes: config.maxFileBytes })
        .then(
          (data) => data.toString('utf8').split(/\r\n|\r|\n/),
          () => undefined,
        )
      files.set(file, pending)
    }
    return pending
  }
  return Promise.all(
    locations.map(async ({ file, range }) => {
      const place = `${shownPath(root, file)}:${range.start.line + 1}:${range.start.character + 1}`
      const line = (await linesOf(file))?.[range.start.line]?.trim()
      if (!line) return place
      const context = line.length > config.maxContextChars ? `${line.slice(0, config.maxContextChars)}…` : line
      return `${place}: ${context}`
    }),
  )
}
