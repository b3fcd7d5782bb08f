import { execFile } from 'node:child_process'
import { constants } from 'node:fs'
import { access, realpath } from 'node:fs/promises'
import path from 'node:path'
import { type Context, Schema } from '@dsh/cordis'
import { SANDBOX_MODES, Sandbox, type SandboxAvailability, type SandboxPolicy, type WrapResult } from './seam.ts'

export interface BwrapSandboxConfig {
  bwrapPath: string
  probeTimeoutMs: number
}

export const Config: Schema<BwrapSandboxConfig> = Schema.object({
  bwrapPath: Schema.string()
    .min(1)
    .default('bwrap')
    .description('The bubblewrap program: a name looked up on PATH, or a path.'),
  probeTimeoutMs: Schema.natural()
    .min(1)
    .default(10_000)
    .description('How long the one-time self-check (running `true` in a sandbox) may take, in milliseconds.'),
})

/**
 * `ctx.sandbox` with bubblewrap (Linux). The host filesystem is mounted
 * read-only, with a fresh /dev, a /proc of a private PID namespace and a
 * private /tmp; `workspace-write` binds the writable roots back read-write
 * and the protected paths read-only again; the network is unshared unless the
 * policy allows it. The first use runs a self-check; until it passes, every
 * confined command is refused.
 */
export class BwrapSandbox extends Sandbox {
  static Config = Config

  private readonly settings: BwrapSandboxConfig
  private availability: Promise<SandboxAvailability> | undefined
  /** The absolute path of bwrap, once the self-check found it. */
  private program: string | undefined

  constructor(ctx: Context, config: BwrapSandboxConfig) {
    super(ctx)
    this.settings = config
  }

  available(): Promise<SandboxAvailability> {
    this.availability ??= this.probe()
    return this.availability
  }

  async wrap(argv: string[], policy: SandboxPolicy, cwd: string): Promise<WrapResult> {
    const problem = checkRequest(argv, policy, cwd)
    if (problem) return { refused: `the sandbox refused the command: ${problem}` }
    if (policy.mode === 'off') return { argv: [...argv] }
    const availability = await this.available()
    if (!availability.ok || this.program === undefined) {
      const reason = availability.ok ? 'bubblewrap was not located' : availability.reason
      return { refused: `the command needs the ${policy.mode} sandbox, which is unavailable here (${reason}), so it was not run` }
    }
    return { argv: [this.program, ...(await bwrapArguments(policy, cwd)), '--', ...argv] }
  }

  private async probe(): Promise<SandboxAvailability> {
    const program = await findExecutable(this.settings.bwrapPath)
    if (!program) {
      const where = this.settings.bwrapPath.includes('/') ? `at ${this.settings.bwrapPath}` : 'on PATH'
      return { ok: false, reason: `bubblewrap (bwrap) was not found ${where}; install the bubblewrap package` }
    }
    const policy: SandboxPolicy = { mode: 'read-only', writableRoots: [], protectedPaths: [], network: false }
    const args = [...(await bwrapArguments(policy, '/')), '--', 'true']
    const failure = await new Promise<string | undefined>((resolve) => {
      execFile(
        program,
        args,
        { env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, timeout: this.settings.probeTimeoutMs, encoding: 'utf8' },
        (error, _stdout, stderr) => {
          if (!error) return resolve(undefined)
          const said = stderr.trim().split('\n')[0]
          const how = error.killed ? `did not finish within ${this.settings.probeTimeoutMs}ms` : `failed (${said || error.message})`
          resolve(how)
        },
      )
    })
    if (failure) {
      this.home.logger('sandbox').warn('bubblewrap self-check %s', failure)
      return { ok: false, reason: `bubblewrap at ${program} failed its self-check: it ${failure}` }
    }
    this.program = program
    return { ok: true }
  }
}

/**
 * The bwrap options (everything before `--`) for a confined policy. Paths are
 * canonicalized, parents are bound before their children, and protected
 * paths come last so they win.
 */
export async function bwrapArguments(policy: SandboxPolicy, cwd: string): Promise<string[]> {
  const args = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc']
  const tmp = await canonical('/tmp')
  const roots = policy.mode === 'workspace-write' ? byDepth(unique(await Promise.all(policy.writableRoots.map(canonical)))) : []
  const tmpWritable = roots.some((root) => within(tmp, root))
  if (!tmpWritable) {
    args.push('--tmpfs', '/tmp')
    // The private /tmp hides the host's; the working directory must stay visible.
    const dir = await canonical(cwd)
    if (within(dir, tmp) && !roots.some((root) => within(dir, root))) args.push('--ro-bind-try', dir, dir)
  }
  for (const root of roots) args.push('--bind-try', root, root)
  if (policy.mode === 'workspace-write') {
    for (const item of byDepth(unique(await Promise.all(policy.protectedPaths.map(canonical))))) args.push('--ro-bind-try', item, item)
  }
  if (!policy.network) args.push('--unshare-net')
  // A private PID namespace: when bwrap dies, everything inside dies with it.
  args.push('--unshare-pid', '--die-with-parent', '--new-session', '--chdir', cwd)
  return args
}

function checkRequest(argv: string[], policy: SandboxPolicy, cwd: string): string | undefined {
  if (!Array.isArray(argv) || argv.length === 0 || !argv.every((arg) => typeof arg === 'string')) return 'argv must be a non-empty list of strings'
  if (!policy || !SANDBOX_MODES.includes(policy.mode)) return `unknown sandbox mode ${JSON.stringify(policy?.mode)}`
  if (typeof policy.network !== 'boolean') return 'the policy says nothing about the network'
  for (const [field, list] of [
    ['writableRoots', policy.writableRoots],
    ['protectedPaths', policy.protectedPaths],
  ] as const) {
    if (!Array.isArray(list)) return `the policy's ${field} is not a list`
    const bad = list.find((item) => typeof item !== 'string' || !path.isAbsolute(item))
    if (bad !== undefined) return `the policy's ${field} holds ${JSON.stringify(bad)}, which is not an absolute path`
  }
  if (typeof cwd !== 'string' || !path.isAbsolute(cwd)) return `the working directory ${JSON.stringify(cwd)} is not an absolute path`
  return undefined
}

/** The real path when it exists, else the normalized path. */
async function canonical(item: string): Promise<string> {
  try {
    return await realpath(item)
  } catch {
    return path.resolve(item)
  }
}

function within(item: string, root: string): boolean {
  const relative = path.relative(root, item)
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative))
}

function unique(items: string[]): string[] {
  return [...new Set(items)]
}

function byDepth(items: string[]): string[] {
  return [...items].sort((a, b) => a.split(path.sep).length - b.split(path.sep).length || (a < b ? -1 : a > b ? 1 : 0))
}

/** The absolute path of an executable: `name` itself when it holds a slash, else the first match on PATH. */
async function findExecutable(name: string): Promise<string | undefined> {
  const candidates = name.includes('/')
    ? [path.resolve(name)]
    : (process.env.PATH ?? '').split(path.delimiter).filter(Boolean).map((dir) => path.join(dir, name))
  for (const candidate of candidates) {
    try {
      await access(candidate, constants.X_OK)
      return candidate
    } catch {
      // next
    }
  }
  return undefined
}
