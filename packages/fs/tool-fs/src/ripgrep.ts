import { spawn } from 'node:child_process'
import path from 'node:path'
import type { Context } from '@dsh/cordis'
import type { HeldPath, ResolvedPath } from '@dsh/fs'
import { scrubEnvironment } from '@dsh/subprocess'
import { type ToolAccess, ToolError, type ToolRunContext } from '@dsh/tools'
import { rgPath } from '@vscode/ripgrep'
import type { FsToolsConfig } from './config.ts'
import { displayPath, fsOptions, shownArgument, spillOf, toolErrorOf } from './files.ts'

/** Keeps at most this much of rg's stderr for messages. */
/**
 * What glob and grep share as tools: read-only, safe to run side by side,
 * stopped after the search timeout, reading the folder they search (the workspace by default).
 */
export function searchTraits(config: FsToolsConfig, tool: 'glob' | 'grep') {
  return {
    readOnly: true,
    isConcurrencySafe: () => true,
    timeoutMs: config.searchTimeoutMs,
    access: (args: { path?: string | undefined; pattern: string }): ToolAccess => ({
      kind: 'read',
      paths: [args.path ?? '.'],
      summary: `${tool} ${args.pattern}`,
    }),
  } as const
}

const STDERR_KEEP = 64 * 1024

/** The environment without credentials (the subprocess seam's rule) or dsh's own settings. */
export function scrubbedEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const clean = scrubEnvironment(env)
  for (const name of Object.keys(clean)) if (name.startsWith('DSH_')) delete clean[name]
  return clean
}

export interface RgOutcome {
  stdout: Buffer
  stderr: string
  /** Exit code; null when rg was killed. */
  code: number | null
  /** rg wrote more than the limit and was stopped; `stdout` holds the first part. */
  overflow: boolean
}

/**
 * Runs the bundled rg with a fixed argument array (never a shell), stdin
 * closed, a scrubbed environment and `--no-config` (so `RIPGREP_CONFIG_PATH`
 * cannot add flags such as `--pre`). Stops rg when its output passes
 * `maxOutputBytes` or the signal aborts, and always waits for it to exit.
 */
export function runRipgrep(
  args: readonly string[],
  options: { cwd: string; signal: AbortSignal; maxOutputBytes: number },
): Promise<RgOutcome> {
  return new Promise<RgOutcome>((resolve, reject) => {
    options.signal.throwIfAborted()
    const child = spawn(rgPath, ['--no-config', ...args], {
      cwd: options.cwd,
      env: scrubbedEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
      windowsHide: true,
    })
    const out: Buffer[] = []
    let outBytes = 0
    let overflow = false
    let stderr = ''
    let failed: Error | undefined
    const stop = () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    }
    const onAbort = () => stop()
    options.signal.addEventListener('abort', onAbort, { once: true })

    child.stdout.on('data', (chunk: Buffer) => {
      if (overflow) return
      const room = options.maxOutputBytes - outBytes
      if (chunk.length > room) {
        out.push(chunk.subarray(0, room))
        outBytes += room
        overflow = true
        stop()
        return
      }
      out.push(chunk)
      outBytes += chunk.length
    })
    child.stderr.setEncoding('utf8')
    child.stderr.on('data', (chunk: string) => {
      if (stderr.length < STDERR_KEEP) stderr += chunk.slice(0, STDERR_KEEP - stderr.length)
    })
    const cannotRun = (error: Error) =>
      new ToolError('SEARCH_FAILED', `could not run ripgrep (${rgPath}): ${error.message}`)
    child.on('error', (error) => {
      failed = error
      // A process that never started emits no 'close' to wait for.
      if (child.pid === undefined) {
        options.signal.removeEventListener('abort', onAbort)
        reject(options.signal.aborted ? options.signal.reason : cannotRun(error))
      }
    })
    child.on('close', (code) => {
      options.signal.removeEventListener('abort', onAbort)
      if (options.signal.aborted) return reject(options.signal.reason)
      if (failed) return reject(cannotRun(failed))
      resolve({ stdout: Buffer.concat(out, outBytes), stderr, code, overflow })
    })
  })
}

/** Where a search looks: the root held open, what to pass rg, and how to show rg's paths. */
export interface SearchRoot {
  info: { path: ResolvedPath; type: HeldPath['type'] }
  /** rg runs here: the held root folder (globs with a `/` match relative to it), or `/` for a root file. */
  cwd: string
  /** The path argument for rg: `.` in the held folder, or the held file itself. */
  target: string
  /** `--glob=!…` arguments that keep deny-listed paths below the root out of rg's walk; they go after any other glob. */
  excludes: string[]
  /** Turns a path rg printed into what the model sees. */
  show(rgPath: string): string
  /** False for a path rg printed that lies on the deny-read list (rg was racing a swapped folder, or the exclusion missed it). */
  allowed(rgPath: string): boolean
  /** Lets go of the held root. */
  close(): void
}

/** A glob segment that matches `text` literally (rg's glob syntax escapes with a backslash). */
function literalGlob(text: string): string {
  return text.replace(/[\\*?[\]{}!]/g, '\\$&')
}

/** `--glob=!/…` arguments for deny-list patterns below the search root (segments relative to it). */
function exclusions(below: readonly string[][]): string[] {
  return below.map(
    (segments) => `--glob=!/${segments.map((segment) => segment.split('*').map(literalGlob).join('*')).join('/')}`,
  )
}

/**
 * Resolves the search root through `ctx.fs` and holds it open (so the
 * `fs/read` policy and the deny-read list see it, and a folder swapped after
 * the check cannot redirect the search), then hands rg the held folder as its
 * working directory, or the held file as its one path. rg does not follow
 * symlinks inside the root. Paths rg prints are mapped back under the path the
 * model gave, relative to the workspace.
 */
export async function searchRoot(
  ctx: Context,
  given: string,
  run: ToolRunContext,
  wantDirectory: boolean,
): Promise<SearchRoot> {
  const shown = shownArgument(run.cwd, given)
  let held: HeldPath
  try {
    held = await ctx.fs.hold(given, fsOptions(run, given))
  } catch (error) {
    throw toolErrorOf(error, shown, run.signal, {
      NOT_FOUND: `${shown} does not exist. Check the path (relative paths start at ${run.cwd}).`,
    })
  }
  const info = { path: held.path, type: held.type }
  const close = () => held.close()
  try {
    held.verify()
  } catch (error) {
    close()
    throw toolErrorOf(error, shown, run.signal)
  }
  const real = held.path.real
  if (held.type === 'directory') {
    const rel = (p: string) => (p.startsWith('./') ? p.slice(2) : p === '.' ? '' : p)
    return {
      info,
      cwd: held.local,
      target: '.',
      excludes: exclusions(ctx.fs.deniedBelow(real)),
      show: (p) => displayPath(run.cwd, path.join(held.path.absolute, rel(p))),
      allowed: (p) => ctx.fs.deniedReason(path.join(real, rel(p))) === undefined,
      close,
    }
  }
  if (wantDirectory || held.type !== 'file') {
    close()
    if (wantDirectory)
      throw new ToolError('FS_NOT_DIRECTORY', `${shown} is not a directory; give a directory to search in.`)
    throw new ToolError('FS_NOT_REGULAR_FILE', `${shown} is neither a file nor a directory.`)
  }
  return {
    info,
    cwd: '/',
    target: held.local,
    excludes: [],
    show: () => displayPath(run.cwd, held.path.absolute),
    allowed: () => true,
    close,
  }
}

/**
 * Runs rg with `args` over a held search root (its exclusions last among the
 * globs, then the root), and lets go of the root once rg has exited.
 */
export async function ripgrepIn(
  root: SearchRoot,
  args: readonly string[],
  options: { signal: AbortSignal; maxOutputBytes: number },
): Promise<RgOutcome> {
  try {
    return await runRipgrep([...args, ...root.excludes, '--', root.target], { ...options, cwd: root.cwd })
  } finally {
    root.close()
  }
}

/** rg's own complaint, first lines only, without its `rg: ` prefixes. */
export function rgComplaint(stderr: string): string {
  const lines = stderr
    .split('\n')
    .map((line) => line.replace(/^rg: /, '').trimEnd())
    .filter((line) => line !== '')
  return lines.slice(0, 12).join('\n')
}

/** Turns a failed rg run (exit 2 with nothing found) into a clear tool error. */
export function rgFailure(outcome: RgOutcome, what: string): ToolError {
  const complaint = rgComplaint(outcome.stderr)
  if (/regex parse error|error parsing regex|regex.*(too big|size limit)/i.test(complaint)) {
    return new ToolError(
      'SEARCH_INVALID_PATTERN',
      `the ${what} is not a valid regular expression (ripgrep/Rust regex syntax):\n${complaint}`,
    )
  }
  if (/glob/i.test(complaint)) return new ToolError('SEARCH_INVALID_GLOB', `the glob is not valid: ${complaint}`)
  return new ToolError(
    'SEARCH_FAILED',
    `ripgrep failed (exit code ${outcome.code ?? 'none'}): ${complaint || 'no error message'}`,
  )
}

/** Splits rg's `--null` output into its records; a record cut off by an overflow is dropped. */
export function nullSeparated(stdout: Buffer, overflow: boolean): string[] {
  const parts = stdout.toString('utf8').split('\0')
  const last = parts.pop()
  if (!overflow && last !== undefined && last !== '') parts.push(last)
  return parts
}

/** What a search result says about its own cut. */
export interface CutMeta {
  truncated: boolean
  spilled: string | null
}

/**
 * The footer for output cut to `shown` of `total` items, recorded in `meta`.
 * The full text goes to `ctx.spill` when a provider is mounted; a failure to
 * save is reported in the footer, never as an error.
 */
export async function cutFooter(
  ctx: Context,
  run: ToolRunContext,
  meta: CutMeta,
  opts: { full: string; label: string; shown: number; total: number; noun: string; narrow: string },
): Promise<string> {
  meta.truncated = true
  const store = spillOf(ctx)
  const head = `Showing the first ${opts.shown} of ${opts.total} ${opts.noun}.`
  if (!store) return `(${head} ${opts.narrow})`
  try {
    const saved = await store.save({ sessionId: run.sessionId, text: opts.full, label: opts.label })
    meta.spilled = saved.path
    const narrow = `${opts.narrow.charAt(0).toLowerCase()}${opts.narrow.slice(1)}`
    return `(${head} The full output (${saved.bytes} bytes) is saved at ${saved.path}; page through it with the read tool (offset and limit), or ${narrow})`
  } catch (error) {
    if (run.signal.aborted) throw error
    return `(${head} Saving the full output failed: ${error instanceof Error ? error.message : String(error)}. ${opts.narrow})`
  }
}
