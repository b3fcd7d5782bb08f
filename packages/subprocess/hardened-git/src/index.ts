import { execFile } from 'node:child_process'

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
