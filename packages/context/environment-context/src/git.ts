import { execFile } from 'node:child_process'

export interface GitSummary {
  branch: string
  /** Porcelain status lines (`XY path`), at most the asked number. */
  entries: string[]
  /** How many entries there were in all. */
  total: number
}

export interface GitOptions {
  timeoutMs: number
  maxEntries: number
}

/**
 * The branch and a short status of the repository holding `cwd`, or
 * undefined outside a repository or when git fails or runs out of time.
 *
 * git runs directly (not as a model command), so a hostile repository's own
 * config must not make it run anything: the fsmonitor hook, hooks, submodule
 * recursion and the clean/smudge filters it defines are switched off, and the
 * index is never written.
 */
export async function gitSummary(cwd: string, options: GitOptions): Promise<GitSummary | undefined> {
  const filters = await git(cwd, ['config', '-z', '--name-only', '--get-regexp', '^filter\\.'], options)
  const neutral = new Set<string>()
  for (const key of filters?.split('\0') ?? []) {
    const driver = /^filter\.(.+)\.[^.]+$/s.exec(key)?.[1]
    if (driver) neutral.add(driver)
  }
  // Passed through GIT_CONFIG_KEY_n/VALUE_n rather than -c, which would split a driver name holding '='.
  const overrides = [...neutral].flatMap((driver) =>
    Object.entries({ clean: '', smudge: '', process: '', required: 'false' }).map(
      ([setting, value]) => [`filter.${driver}.${setting}`, value] as const,
    ),
  )
  const out = await git(
    cwd,
    [
      'status',
      '--porcelain=v1',
      '-z',
      '--branch',
      '--ignore-submodules=all',
      '--untracked-files=normal',
      '--no-renames',
    ],
    options,
    overrides,
  )
  if (out === undefined) return undefined
  const [head = '', ...lines] = out.split('\0').filter(Boolean)
  const branch = head.startsWith('## ') ? head.slice(3) : head
  return { branch, entries: lines.slice(0, options.maxEntries), total: lines.length }
}

const HARDENING = [
  '-c',
  'core.fsmonitor=false',
  '-c',
  'core.hooksPath=/dev/null',
  '-c',
  'status.submoduleSummary=false',
  '--no-optional-locks',
]

function git(
  cwd: string,
  args: string[],
  options: GitOptions,
  config: ReadonlyArray<readonly [string, string]> = [],
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
        maxBuffer: 4 * 1024 * 1024,
        env,
        windowsHide: true,
      },
      (error, stdout) => resolve(error ? undefined : stdout),
    )
  })
}
