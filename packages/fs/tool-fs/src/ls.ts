import path from 'node:path'
import type { Context } from '@dsh/cordis'
import { type DirEntry, type FileStat, FileSystemError } from '@dsh/fs'
import { callTarget, defineTool, ToolError, type ToolOutput, toolParameters } from '@dsh/tools'
import { z } from 'zod'
import type { FsToolsConfig } from './config.ts'
import { displayPath, fsOptions, MAX_PATH_LENGTH, printable, shownArgument, toolErrorOf } from './files.ts'

interface Node {
  name: string
  type: DirEntry['type']
  /** Path relative to the listed folder. */
  rel: string
  children?: Node[]
  /** Entries left out because the entry budget ran out. */
  omitted: number
  /** A folder the depth limit kept closed. */
  closed: boolean
  /** Why a folder could not be listed. */
  problem?: string
}

/** A glob on one name or relative path: `*` and `?` within a segment, `**` across segments, `[...]` classes. */
export function globMatcher(pattern: string): RegExp {
  let source = ''
  for (let i = 0; i < pattern.length; i += 1) {
    const c = pattern[i] as string
    if (c === '*') {
      if (pattern[i + 1] === '*') {
        source += '.*'
        i += 1
      } else source += '[^/]*'
    } else if (c === '?') source += '[^/]'
    else if (c === '[') {
      const close = pattern.indexOf(']', i + 1)
      if (close === -1) source += '\\['
      else {
        const body = pattern.slice(i + 1, close).replace(/\\/g, '\\\\')
        source += `[${body.startsWith('!') ? `^${body.slice(1)}` : body}]`
        i = close
      }
    } else source += c.replace(/[.+^${}()|\\]/g, '\\$&')
  }
  return new RegExp(`^${source}$`)
}

const lsParameters = toolParameters(
  z.object({
    path: z.string().min(1).max(MAX_PATH_LENGTH).optional().describe('The directory to list. Default: the workspace.'),
    ignore: z
      .array(z.string().min(1).max(256))
      .max(100)
      .optional()
      .describe('Glob patterns of names (or relative paths) to leave out, e.g. ["dist", "*.log"].'),
  }),
)

export function lsTool(ctx: Context, config: FsToolsConfig) {
  return defineTool({
    name: 'ls',
    presentation: { kind: 'read', view: 'generic', title: (args, shown) => `List ${shown(callTarget(args) ?? '.')}` },
    description:
      `List a directory as a tree, ${config.lsMaxDepth} levels deep and at most ${config.lsMaxEntries} entries, shallow entries first. ` +
      'Directories end with `/`, symlinks with `@` (not followed); a directory shown as `name/ …` was not opened (list it to see inside). ' +
      `Leaves out ${config.lsIgnore.length ? config.lsIgnore.join(', ') : 'nothing'} and whatever \`ignore\` names. ` +
      'To find files by pattern use glob; to read a file use read.',
    parameters: lsParameters,
    readOnly: true,
    isConcurrencySafe: () => true,
    access: (args) => ({ kind: 'read', paths: [args.path ?? '.'], summary: `ls ${args.path ?? '.'}` }),
    async execute(args, run): Promise<ToolOutput> {
      const given = args.path ?? '.'
      const options = fsOptions(run, given)
      let shown = shownArgument(run.cwd, given)
      let info: FileStat
      try {
        info = await ctx.fs.stat(given, options)
      } catch (error) {
        throw toolErrorOf(error, shown, run.signal, {
          NOT_FOUND: `${shown} does not exist. Check the path (relative paths start at ${run.cwd}).`,
        })
      }
      shown = displayPath(run.cwd, info.path.absolute)
      if (info.type !== 'directory')
        throw new ToolError('FS_NOT_DIRECTORY', `${shown} is not a directory. Use read to see a file.`)

      const ignores = [...config.lsIgnore, ...(args.ignore ?? [])].map(globMatcher)
      const ignored = (node: { name: string; rel: string }) =>
        ignores.some((re) => re.test(node.name) || re.test(node.rel))
      const root: Node = { name: shown, type: 'directory', rel: '', omitted: 0, closed: false }
      let budget = config.lsMaxEntries
      let truncated = false
      let level: Node[] = [root]
      for (let depth = 0; depth < config.lsMaxDepth && level.length > 0; depth += 1) {
        const next: Node[] = []
        for (const folder of level) {
          let entries: DirEntry[]
          try {
            // Each folder must still lie where the listing found it: a folder swapped for a symlink is not followed.
            const real = path.join(info.path.real, folder.rel)
            entries = await ctx.fs.readdir(path.join(info.path.absolute, folder.rel), { ...options, expectReal: real })
          } catch (error) {
            if (folder === root) throw toolErrorOf(error, shown, run.signal)
            if (run.signal.aborted) throw error
            folder.problem =
              error instanceof FileSystemError
                ? error.code === 'DENIED'
                  ? `access denied: ${error.reason}`
                  : error.code.toLowerCase().replace(/_/g, ' ')
                : String(error)
            folder.children = []
            continue
          }
          const kept = entries
            .map((entry) => ({ ...entry, rel: folder.rel ? `${folder.rel}/${entry.name}` : entry.name }))
            .filter((entry) => !ignored(entry))
            .sort(
              (a, b) =>
                Number(b.type === 'directory') - Number(a.type === 'directory') ||
                (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
            )
          folder.children = []
          for (const entry of kept) {
            if (budget === 0) {
              folder.omitted += 1
              truncated = true
              continue
            }
            budget -= 1
            const node: Node = {
              name: entry.name,
              type: entry.type,
              rel: entry.rel,
              omitted: 0,
              closed: entry.type === 'directory',
            }
            folder.children.push(node)
            if (entry.type === 'directory') next.push(node)
          }
        }
        for (const folder of next) folder.closed = depth + 1 >= config.lsMaxDepth
        level = next
      }
      // Folders reached but never opened because the budget ran out first.
      for (const folder of level) if (folder.children === undefined) folder.closed = true

      const lines: string[] = []
      const render = (node: Node, indent: string) => {
        const mark = node.type === 'directory' ? '/' : node.type === 'symlink' ? '@' : ''
        const label =
          node === root
            ? `${node.name}${node.name.endsWith('/') ? '' : '/'}`
            : `${indent}${printable(node.name)}${mark}`
        lines.push(node.closed && node.type === 'directory' && !node.children?.length ? `${label} …` : label)
        if (node.problem) lines.push(`${indent}  (cannot list: ${node.problem})`)
        for (const child of node.children ?? []) render(child, node === root ? '  ' : `${indent}  `)
        if (node.omitted > 0)
          lines.push(
            `${node === root ? '  ' : `${indent}  `}… ${node.omitted} more entr${node.omitted === 1 ? 'y' : 'ies'} not shown`,
          )
      }
      render(root, '')
      if (root.children?.length === 0 && !root.omitted) lines.push('  (empty)')
      if (truncated)
        lines.push('', `(Showing ${config.lsMaxEntries} entries. List a subdirectory, or use glob, to see more.)`)
      return {
        content: lines.join('\n'),
        meta: { path: info.path.absolute, entries: config.lsMaxEntries - budget, truncated },
      }
    },
  })
}
