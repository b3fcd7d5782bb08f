import { Schema, stringList } from '@dsh/cordis'

export const FS_TOOL_NAMES = ['read', 'read_image', 'write', 'edit', 'glob', 'grep', 'ls'] as const
export type FsToolName = (typeof FS_TOOL_NAMES)[number]

export interface FsToolsConfig {
  tools: FsToolName[]
  readLimit: number
  maxLineLength: number
  maxReadBytes: number
  maxImageBytes: number
  maxWriteBytes: number
  maxEditBytes: number
  maxWriteDiffBytes: number
  diffContextLines: number
  maxDiffLines: number
  globMaxResults: number
  globIncludeIgnored: boolean
  grepMaxResults: number
  grepMaxLineLength: number
  searchMaxOutputBytes: number
  searchTimeoutMs: number
  lsMaxDepth: number
  lsMaxEntries: number
  lsIgnore: string[]
}

export const Config: Schema<FsToolsConfig> = Schema.object({
  tools: Schema.array(Schema.union(FS_TOOL_NAMES))
    .default([...FS_TOOL_NAMES])
    .description('Which of the file tools to register.'),
  readLimit: Schema.natural()
    .min(1)
    .default(2000)
    .description('Lines `read` shows by default, and the most a call may ask for.'),
  maxLineLength: Schema.natural()
    .min(1)
    .default(2000)
    .description('Characters of one line `read` shows before cutting it.'),
  maxReadBytes: Schema.natural()
    .min(1)
    .default(51_200)
    .description('Bytes of numbered lines one `read` returns at most.'),
  maxImageBytes: Schema.natural()
    .min(1)
    .default(5 * 1024 * 1024)
    .description('Largest image file (PNG, JPEG, GIF, WebP) `read` returns as an image block.'),
  maxWriteBytes: Schema.natural()
    .min(1)
    .default(10 * 1024 * 1024)
    .description('Largest content one `write` accepts.'),
  maxEditBytes: Schema.natural()
    .min(1)
    .default(10 * 1024 * 1024)
    .description('Largest file `edit` loads to change.'),
  maxWriteDiffBytes: Schema.natural()
    .default(1024 * 1024)
    .description(
      'Largest file `write` reads before replacing it, for the diff it returns (and the old text surfaces show); ' +
        'a larger one is replaced without a diff.',
    ),
  diffContextLines: Schema.natural()
    .default(3)
    .description('Unchanged lines shown around each change in the diff `edit` and `write` return.'),
  maxDiffLines: Schema.natural().min(1).default(120).description('Lines of diff `edit` and `write` return at most.'),
  globMaxResults: Schema.natural()
    .min(1)
    .default(100)
    .description('Paths `glob` lists at most; the full list is spilled when `ctx.spill` exists.'),
  globIncludeIgnored: Schema.boolean()
    .default(false)
    .description('Let `glob` list files that .gitignore and .ignore files exclude.'),
  grepMaxResults: Schema.natural()
    .min(1)
    .default(250)
    .description('Matching lines one `grep` call shows; past them the full list is saved to a file.'),
  grepMaxLineLength: Schema.natural()
    .min(1)
    .default(2000)
    .description('Characters of one matching line `grep` shows before cutting it.'),
  searchMaxOutputBytes: Schema.natural()
    .min(1)
    .default(20_000_000)
    .description(
      'Raw ripgrep output read at most per `glob` or `grep`; past it the search is stopped and reported incomplete.',
    ),
  searchTimeoutMs: Schema.natural()
    .min(1)
    .default(30_000)
    .description('Time budget of one `glob` or `grep` call in milliseconds.'),
  lsMaxDepth: Schema.natural().min(1).default(3).description('Folder levels `ls` shows below the listed folder.'),
  lsMaxEntries: Schema.natural().min(1).default(200).description('Entries `ls` shows at most.'),
  lsIgnore: stringList(
    'Entry names (globs with `*` and `?`) `ls` always leaves out, besides those a call passes in `ignore`.',
    ['.git', 'node_modules', '__pycache__', '.DS_Store'],
  ),
})
