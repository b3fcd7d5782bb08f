import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import path from 'node:path'

export interface HardenedGitOptions {
  /** The call is killed (SIGKILL) after this long. */
  timeoutMs: number
  /** The most stdout kept; a call that writes more fails. */
  maxBytes?: number
}

/** Switches a repository's config cannot turn back on: no fsmonitor, no hooks, no submodule summary, no index write. */
const HARDENING = [
  '-c',
  'core.fsmonitor=false',
  '-c',
  'core.hooksPath=/dev/null',
  '-c',
  'status.submoduleSummary=false',
  '--no-optional-locks',
]

/**
 * Runs a read-only git command in `cwd` against a repository that may be
 * hostile, and answers its stdout, or undefined when git fails, is missing
 * or runs out of time. The repository's own config cannot make it run
 * anything: fsmonitor and hooks are off, the index is never written, and
 * every `filter.<driver>` the config defines gets empty clean/smudge/process
 * commands (looked up by a first git call, passed through
 * `GIT_CONFIG_KEY_n` so a driver name holding `=` cannot escape).
 * Submodules are the caller's to ignore (`--ignore-submodules=all`).
 */
export async function hardenedGit(
  cwd: string,
  args: string[],
  options: HardenedGitOptions,
): Promise<string | undefined> {
  if (!mayHaveWorkTree(cwd)) return undefined
  const filters = await run(cwd, ['config', '-z', '--name-only', '--get-regexp', '^filter\\.'], options, [])
  const neutral = new Set<string>()
  for (const key of filters?.split('\0') ?? []) {
    const driver = /^filter\.(.+)\.[^.]+$/s.exec(key)?.[1]
    if (driver) neutral.add(driver)
  }
  const overrides = [...neutral].flatMap((driver) =>
    Object.entries({ clean: '', smudge: '', process: '', required: 'false' }).map(
      ([setting, value]) => [`filter.${driver}.${setting}`, value] as const,
    ),
  )
  return run(cwd, args, options, overrides)
}

/**
 * Whether git could find a work tree for `cwd`: `GIT_DIR` is set, or `cwd` or
 * a folder above it has a `.git` entry. When not, a work-tree command can only
 * fail, so it is not started: two git processes saved before a session's first
 * request in a folder that is not a repository.
 */
export function mayHaveWorkTree(cwd: string, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.GIT_DIR) return true
  for (let dir = path.resolve(cwd); ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, '.git'))) return true
    if (path.dirname(dir) === dir) return false
  }
}

function run(
  cwd: string,
  args: string[],
  options: HardenedGitOptions,
  config: ReadonlyArray<readonly [string, string]>,
): Promise<string | undefined> {
  const env: NodeJS.ProcessEnv = { ...process.env, GIT_OPTIONAL_LOCKS: '0', GIT_TERMINAL_PROMPT: '0', GIT_PAGER: 'cat' }
  env.GIT_CONFIG_COUNT = String(config.length)
  config.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = key
    env[`GIT_CONFIG_VALUE_${i}`] = value
  })
  return new Promise((resolve) => {
    execFile(
      'git',
      [...HARDENING, ...args],
      {
        cwd,
        timeout: options.timeoutMs,
        killSignal: 'SIGKILL',
        maxBuffer: options.maxBytes ?? 4 * 1024 * 1024,
        env,
        windowsHide: true,
      },
      (error, stdout) => resolve(error ? undefined : stdout),
    )
  })
}
