import type { Context } from '@dsh/cordis'
import { defineTool, textArgument, ToolError, toolParameters } from '@dsh/tools'
import { searchTitle } from './presentation.ts'
import { z } from 'zod'
import type { FsToolsConfig } from './config.ts'
import { MAX_PATH_LENGTH } from './files.ts'
import { cutFooter, nullSeparated, rgFailure, ripgrepIn, searchRoot, searchTraits } from './ripgrep.ts'

/** Version-control folders never listed. */
const VCS_FOLDERS = ['.git', '.svn', '.hg', '.bzr', '.jj', '.sl']

/** Longest pattern accepted; real globs are far shorter. */
export const MAX_PATTERN_LENGTH = 4096

const globParameters = toolParameters(
  z.object({
    pattern: z
      .string()
      .min(1)
      .max(MAX_PATTERN_LENGTH)
      .describe('The glob pattern (ripgrep glob syntax: *, **, ?, [abc], {a,b}).'),
    path: z
      .string()
      .min(1)
      .max(MAX_PATH_LENGTH)
      .optional()
      .describe('The directory to search in. Default: the workspace.'),
  }),
)

export function globTool(ctx: Context, config: FsToolsConfig) {
  const ignored = config.globIncludeIgnored
    ? 'Files excluded by .gitignore are listed too.'
    : 'Files excluded by .gitignore are left out.'
  return defineTool({
    name: 'glob',
    presentation: {
      kind: 'search',
      view: 'search',
      title: searchTitle((args) => `Find ${textArgument(args, 'pattern') ?? ''}`),
    },
    description:
      'Find files by name pattern, e.g. `**/*.ts` or `src/**/test_*.py`. A pattern without `/` matches file names at any depth; ' +
      'one with `/` matches paths relative to `path`. Lists files only (not directories), most recently modified first, ' +
      `hidden files included. ${ignored} Shows at most ${config.globMaxResults} paths.`,
    parameters: globParameters,
    ...searchTraits(config, 'glob'),
    async execute(args, run) {
      if (args.pattern.startsWith('!')) {
        throw new ToolError(
          'SEARCH_INVALID_GLOB',
          'a glob pattern cannot start with "!" (that would exclude files instead of finding them).',
        )
      }
      if (args.pattern.includes('\0')) throw new ToolError('SEARCH_INVALID_GLOB', 'the pattern contains a NUL byte.')
      const root = await searchRoot(ctx, args.path ?? '.', run, true)
      const rgArgs = ['--files', '--null', '--hidden', '--no-require-git', '--sortr=modified', `--glob=${args.pattern}`]
      for (const folder of VCS_FOLDERS) rgArgs.push(`--glob=!${folder}`)
      if (config.globIncludeIgnored) rgArgs.push('--no-ignore')
      const outcome = await ripgrepIn(root, rgArgs, { signal: run.signal, maxOutputBytes: config.searchMaxOutputBytes })
      const found = nullSeparated(outcome.stdout, outcome.overflow).filter(root.allowed)
      // rg exits 1 when nothing matched, and 2 on trouble that may still leave results (an unreadable folder).
      if (outcome.code !== 0 && outcome.code !== 1 && found.length === 0 && !outcome.overflow)
        throw rgFailure(outcome, 'glob pattern')

      const paths = found.map(root.show)
      const meta = {
        root: root.info.path.absolute,
        total: paths.length,
        truncated: false,
        spilled: null as string | null,
      }
      if (paths.length === 0) return { content: 'No files found', meta }
      const notes: string[] = []
      let listed = paths
      if (paths.length > config.globMaxResults) {
        listed = paths.slice(0, config.globMaxResults)
        notes.push(
          await cutFooter(ctx, run, meta, {
            full: paths.join('\n'),
            label: 'glob',
            shown: listed.length,
            total: paths.length,
            noun: 'files',
            narrow: 'Narrow the pattern or the path to see the rest.',
          }),
        )
      }
      if (outcome.overflow)
        notes.push(
          `(The listing passed ${config.searchMaxOutputBytes} bytes and was stopped, so it is incomplete. Narrow the pattern or the path.)`,
        )
      return { content: [listed.join('\n'), ...notes].join('\n\n'), meta }
    },
  })
}
