import { createHash } from 'node:crypto'
import { mkdir, stat, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { text } from 'node:stream/consumers'
import type { Subprocess } from '@dsh/subprocess'

/** How many times a snapshot retries without a path that changed while it was taken. */
const VANISHED_RETRIES = 8

/** How a path differs between a snapshot and the workspace now, from the workspace's side. */
export type FileChange = 'modified' | 'added' | 'deleted'

export interface ChangedFile {
  path: string
  change: FileChange
}

export interface ShadowOptions {
  /** The folder holding one shadow repository per workspace. */
  root: string
  maxFileBytes: number
  timeoutMs: number
  /** Absolute paths never recorded (dsh's home, the checkpoint root). */
  exclude: readonly string[]
}

/** The ref naming the newest snapshot of a workspace; every snapshot commit has the previous one as parent. */
const HEAD_REF = 'refs/dsh/head'
const IDENTITY = { GIT_AUTHOR_NAME: 'dsh', GIT_AUTHOR_EMAIL: 'dsh@localhost' }

/**
 * A git repository under dsh's home that records one workspace's files,
 * used with `--git-dir` and `--work-tree` so the workspace's own `.git` is
 * never read or written. Git runs with no system or global config, so the
 * user's aliases, hooks and fsmonitor settings do not apply.
 */
export class ShadowRepo {
  readonly dir: string

  constructor(
    private readonly subprocess: Subprocess,
    readonly workspace: string,
    private readonly options: ShadowOptions,
  ) {
    const hash = createHash('sha256').update(workspace).digest('hex').slice(0, 24)
    this.dir = path.join(options.root, hash)
  }

  /** Runs git on the shadow repository; throws with git's stderr on a non-zero exit or a timeout. */
  async git(args: string[], stdin?: string, repo = true): Promise<string> {
    const handle = this.subprocess.run({
      argv: ['git', ...(repo ? [`--git-dir=${this.dir}`, `--work-tree=${this.workspace}`] : []), ...args],
      cwd: this.workspace,
      env: {
        ...IDENTITY,
        GIT_COMMITTER_NAME: IDENTITY.GIT_AUTHOR_NAME,
        GIT_COMMITTER_EMAIL: IDENTITY.GIT_AUTHOR_EMAIL,
        GIT_CONFIG_NOSYSTEM: '1',
        GIT_CONFIG_GLOBAL: '/dev/null',
        GIT_CONFIG_COUNT: '0',
        GIT_CONFIG_PARAMETERS: '',
        ...(repo ? { GIT_INDEX_FILE: path.join(this.dir, 'index') } : {}),
        GIT_OPTIONAL_LOCKS: '0',
        LC_ALL: 'C',
      },
      ...(stdin !== undefined ? { stdin } : {}),
      timeoutMs: this.options.timeoutMs,
    })
    const [out, err, exit] = await Promise.all([text(handle.stdout), text(handle.stderr), handle.done])
    if (exit.timedOut)
      throw new Error(`git ${args[0]} in ${this.dir} took over ${this.options.timeoutMs} ms and was stopped`)
    if (exit.code !== 0) throw new Error(`git ${args[0]} in ${this.dir} failed: ${err.trim() || `exit ${exit.code}`}`)
    return out
  }

  /** Creates the repository on first use, with the paths that must never be recorded in its exclude file. */
  async ensure(): Promise<void> {
    if (await stat(path.join(this.dir, 'HEAD')).catch(() => undefined)) return
    await mkdir(this.options.root, { recursive: true, mode: 0o700 })
    await this.git(['init', '--quiet', '--bare', this.dir], undefined, false)
    const excluded = this.options.exclude
      .map((p) => path.relative(this.workspace, p))
      .filter((rel) => rel && !rel.startsWith('..') && !path.isAbsolute(rel))
      .map((rel) => `/${rel.split(path.sep).join('/')}/`)
    await writeFile(path.join(this.dir, 'info', 'exclude'), `${excluded.join('\n')}\n`)
    await writeFile(path.join(this.dir, 'workspace'), `${this.workspace}\n`)
  }

  /**
   * Records the workspace's tracked and untracked-but-not-ignored files (its
   * `.gitignore` files apply) as a tree; files over `maxFileBytes` are left
   * out. Returns the tree id.
   */
  async writeTree(): Promise<string> {
    await this.ensure()
    const listed = await this.git(['ls-files', '-z', '--others', '--modified', '--exclude-standard'])
    const big: string[] = []
    for (const rel of new Set(listed.split('\0').filter(Boolean))) {
      const info = await stat(path.join(this.workspace, rel)).catch(() => undefined)
      if (info?.isFile() && info.size > this.options.maxFileBytes) big.push(rel)
    }
    // A path that changes under the snapshot (gone between git's listing and its stat, a folder turned
    // into a link) is left out of this snapshot, and the add tried again.
    const vanished: string[] = []
    for (let attempt = 0; ; attempt++) {
      const specs = ['.', ...[...big, ...vanished].map((rel) => `:(exclude,literal)${rel}`)]
      try {
        await this.git(['add', '--all', '--pathspec-from-file=-', '--pathspec-file-nul'], `${specs.join('\0')}\0`)
        break
      } catch (error) {
        // `unable to stat 'x'`, `readlink("x")`, `'x' does not have a commit checked out`: git names the path.
        const named = /failed: [\s\S]*?(?:'([^']+)'|\("([^"]+)"\))/.exec(error instanceof Error ? error.message : '')
        const gone = named?.[1] ?? named?.[2]
        if (!gone || attempt >= VANISHED_RETRIES) throw error
        vanished.push(gone)
      }
    }
    if (big.length) {
      const dropped = big.map((rel) => `:(literal)${rel}`)
      await this.git(
        ['rm', '--cached', '--quiet', '--ignore-unmatch', '--pathspec-from-file=-', '--pathspec-file-nul'],
        `${dropped.join('\0')}\0`,
      )
    }
    return (await this.git(['write-tree'])).trim()
  }

  /** A snapshot commit on top of the workspace's chain; `message` says what it is (see `CommitKind`). */
  async commit(tree: string, message: string): Promise<string> {
    const parent = await this.head()
    const commit = (await this.git(['commit-tree', tree, ...(parent ? ['-p', parent] : []), '-m', message])).trim()
    await this.git(['update-ref', HEAD_REF, commit])
    return commit
  }

  async head(): Promise<string | undefined> {
    const out = await this.git(['rev-parse', '--quiet', '--verify', `${HEAD_REF}^{commit}`]).catch(() => '')
    return out.trim() || undefined
  }

  async exists(commit: string): Promise<boolean> {
    return this.git(['cat-file', '-e', `${commit}^{commit}`]).then(
      () => true,
      () => false,
    )
  }

  /** How the workspace (as `tree`) differs from `from`. */
  async diff(from: string, tree: string): Promise<ChangedFile[]> {
    const out = await this.git(['diff-tree', '-r', '-z', '--no-renames', '--name-status', from, tree])
    const parts = out.split('\0').filter(Boolean)
    const changes: ChangedFile[] = []
    for (let i = 0; i + 1 < parts.length; i += 2) {
      const status = parts[i] as string
      const file = parts[i + 1] as string
      changes.push({ path: file, change: status === 'A' ? 'added' : status === 'D' ? 'deleted' : 'modified' })
    }
    return changes
  }

  /**
   * The snapshot commits after `from` up to the head, oldest first, each with
   * its message and the paths it changed against its parent.
   */
  async since(from: string): Promise<{ message: string; paths: string[] }[]> {
    const head = await this.head()
    if (!head) return []
    const out = await this.git([
      'log',
      '-z',
      '--reverse',
      '--no-renames',
      '--name-only',
      '--format=%x01%s',
      `${from}..${head}`,
    ])
    return out
      .split('\x01')
      .filter(Boolean)
      .map((chunk) => {
        const [first = '', ...rest] = chunk.split('\0')
        const [message = '', ...firstPath] = first.split('\n')
        return {
          message,
          paths: [...firstPath, ...rest].map((p) => p.replace(/^\n/, '')).filter(Boolean),
        }
      })
  }

  /** Puts the files of `commit` back at `paths` (the index is left as it is). */
  async restore(commit: string, paths: readonly string[]): Promise<void> {
    if (!paths.length) return
    const specs = paths.map((p) => `:(literal)${p}`)
    await this.git(
      ['restore', `--source=${commit}`, '--worktree', '--pathspec-from-file=-', '--pathspec-file-nul'],
      `${specs.join('\0')}\0`,
    )
  }
}
