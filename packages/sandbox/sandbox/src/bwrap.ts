import { execFile } from 'node:child_process'
import { constants, rmSync } from 'node:fs'
import { access, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { type Context, Schema, stringList } from '@dsh/cordis'
import { Placeholders } from './placeholders.ts'
import { bwrapArguments, protectedPathStates, reaperArguments, SECCOMP_FD, writableRoots } from './profile.ts'
import {
  NETWORK_MODES,
  type NetworkAttachment,
  SANDBOX_MODES,
  Sandbox,
  type SandboxAvailability,
  type SandboxPolicy,
  type WrapOptions,
  type WrapResult,
} from './seam.ts'
import { buildSeccompFilter } from './seccomp.ts'

export interface BwrapSandboxConfig {
  bwrapPath: string
  nsenterPath: string
  probeTimeoutMs: number
  hiddenPaths: string[]
  secretFiles: string[]
}

export const Config: Schema<BwrapSandboxConfig> = Schema.object({
  bwrapPath: Schema.string()
    .min(1)
    .default('bwrap')
    .description('The bubblewrap program: a name looked up on PATH, or a path.'),
  nsenterPath: Schema.string()
    .min(1)
    .default('nsenter')
    .description('nsenter (util-linux), which puts commands with network proxy or on into their network namespace.'),
  probeTimeoutMs: Schema.natural()
    .min(1)
    .default(10_000)
    .description('How long the one-time self-check (running `true` in a sandbox) may take, in milliseconds.'),
  hiddenPaths: stringList(
    "Absolute folders or files that sandboxed commands see as empty and read-only (the base bundle hides dsh's home). " +
      'A folder holding the working directory or a writable root stays visible; secretFiles inside it are still hidden.',
  ),
  secretFiles: stringList(
    'Absolute files that sandboxed commands always see as empty; a `*` segment matches any one name.',
  ),
})

/**
 * `ctx.sandbox` with bubblewrap (Linux). Confined commands run in a user
 * namespace with no capabilities, `no_new_privs` and a seccomp filter, so they
 * cannot change their mounts or leave their namespaces even when dsh runs as
 * root. The host filesystem is read-only with a fresh /dev, a /proc of a
 * private PID namespace and a private /tmp; `workspace-write` binds the
 * writable roots back read-write and the protected paths read-only again
 * (creating empty stand-ins for missing ones); hidden paths are masked; the
 * network is unshared unless the policy allows it. Mode `off` only adds a
 * private PID namespace, so nothing the command starts outlives it. The first
 * use runs a self-check; until it passes, every confined command is refused.
 */
export class BwrapSandbox extends Sandbox {
  static Config = Config

  private readonly settings: BwrapSandboxConfig
  private availability: Promise<SandboxAvailability> | undefined
  /** The absolute path of bwrap, once the self-check found it. */
  private program: string | undefined
  /** The absolute path of nsenter, looked up on the first command that joins a network namespace. */
  private nsenter: Promise<string | undefined> | undefined
  /** The folder (0700) holding the seccomp filter, once the self-check wrote it. */
  private filterFolder: string | undefined
  private readonly placeholders = new Placeholders()

  constructor(ctx: Context, config: BwrapSandboxConfig) {
    super(ctx)
    this.settings = config
    for (const [field, list] of [
      ['hiddenPaths', config.hiddenPaths],
      ['secretFiles', config.secretFiles],
    ] as const) {
      const bad = list.find((item) => !path.isAbsolute(item))
      if (bad !== undefined)
        throw new Error(`sandbox: ${field} holds ${JSON.stringify(bad)}, which is not an absolute path`)
    }
    ctx.effect(
      () => () => {
        if (this.filterFolder) rmSync(this.filterFolder, { recursive: true, force: true })
      },
      'sandbox: remove the seccomp filter file',
    )
  }

  available(): Promise<SandboxAvailability> {
    this.availability ??= this.probe()
    return this.availability
  }

  async wrap(argv: string[], policy: SandboxPolicy, cwd: string, options: WrapOptions = {}): Promise<WrapResult> {
    const problem = checkRequest(argv, policy, cwd)
    if (problem) return { refused: `the sandbox refused the command: ${problem}` }
    const availability = await this.available()
    if (policy.mode === 'off') {
      // Nothing to confine; with bwrap at hand, a private PID namespace still reaps what the command leaves behind.
      if (!availability.ok || this.program === undefined) return { argv: [...argv] }
      return { argv: [this.program, ...reaperArguments(cwd, isRoot(), options.interactive === true), '--', ...argv] }
    }
    if (!availability.ok || this.program === undefined || this.filterFolder === undefined) {
      const reason = availability.ok ? 'bubblewrap was not located' : availability.reason
      return {
        refused: `the command needs the ${policy.mode} sandbox, which is unavailable here (${reason}), so it was not run`,
      }
    }
    const roots = await writableRoots(policy)
    const states = await protectedPathStates(policy, roots)
    const planted = states.find((item) => item.state === 'symlink')
    if (planted) {
      return {
        refused:
          `the protected path ${planted.path} is a symlink, which the sandbox will not follow, so the command was not run. ` +
          'Replace the symlink with the real folder or file, or run the command with approval outside the sandbox.',
      }
    }
    const created: string[] = []
    const release = async () => {
      await Promise.all(created.splice(0).map((item) => this.placeholders.release(item)))
    }
    for (const item of states.filter((entry) => entry.state === 'missing')) {
      if (!(await this.placeholders.acquire(item.path))) {
        await release()
        return {
          refused: `the protected path ${item.path} could not be guarded (its placeholder could not be created), so the command was not run`,
        }
      }
      created.push(item.path)
    }
    let prefix: string[] = []
    let network: NetworkAttachment | undefined
    if (policy.network !== 'off') {
      const attached = await this.attachNetwork(policy)
      if ('refused' in attached) {
        await release()
        return attached
      }
      network = attached.network
      prefix = attached.prefix
    }
    const hidden = { paths: this.settings.hiddenPaths, secretFiles: this.settings.secretFiles }
    const bwrapOptions = await bwrapArguments(policy, cwd, hidden, network, roots)
    const filter = path.join(this.filterFolder, FILTER_FILE)
    return { argv: [...prefix, ...withSeccompFd(filter), this.program, ...bwrapOptions, '--', ...argv], release }
  }

  /** The network namespace a command with network proxy or on joins, through nsenter. */
  private async attachNetwork(
    policy: SandboxPolicy,
  ): Promise<{ network: NetworkAttachment; prefix: string[] } | { refused: string }> {
    const mode = policy.network as 'proxy' | 'on'
    const service = this.home.get('sandboxNetwork')
    if (!service) {
      return {
        refused: `the command asks for network "${mode}", but the sandbox network service (@dsh/sandbox-network) is not running, so it was not run`,
      }
    }
    this.nsenter ??= findExecutable(this.settings.nsenterPath)
    const nsenter = await this.nsenter
    if (!nsenter) {
      return {
        refused: `the command asks for network "${mode}", which needs nsenter (util-linux), and it was not found, so it was not run`,
      }
    }
    const attached = await service.attach(mode, policy.proxyToken)
    if ('refused' in attached)
      return {
        refused: `the command asks for network "${mode}", which is unavailable here (${attached.refused}), so it was not run`,
      }
    const user = attached.userNamespace ? [`--user=${attached.userNamespace}`, '--preserve-credentials'] : []
    return { network: attached, prefix: [nsenter, ...user, `--net=${attached.namespace}`, '--'] }
  }

  private async probe(): Promise<SandboxAvailability> {
    const program = await findExecutable(this.settings.bwrapPath)
    if (!program) {
      const where = this.settings.bwrapPath.includes('/') ? `at ${this.settings.bwrapPath}` : 'on PATH'
      return { ok: false, reason: `bubblewrap (bwrap) was not found ${where}; install the bubblewrap package` }
    }
    let filter: Buffer
    try {
      filter = buildSeccompFilter()
    } catch (error) {
      return { ok: false, reason: (error as Error).message }
    }
    const folder = await mkdtemp(path.join(tmpdir(), 'dsh-sandbox-'))
    await writeFile(path.join(folder, FILTER_FILE), filter, { mode: 0o600 })
    const policy: SandboxPolicy = { mode: 'read-only', writableRoots: [], protectedPaths: [], network: 'off' }
    const options = await bwrapArguments(policy, '/', { paths: [], secretFiles: [] })
    const [shell, ...prefix] = withSeccompFd(path.join(folder, FILTER_FILE))
    const failure = await new Promise<string | undefined>((resolve) => {
      execFile(
        shell as string,
        [...prefix, program, ...options, '--', 'true'],
        { env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, timeout: this.settings.probeTimeoutMs, encoding: 'utf8' },
        (error, _stdout, stderr) => {
          if (!error) return resolve(undefined)
          const said = stderr.trim().split('\n')[0]
          const how = error.killed
            ? `did not finish within ${this.settings.probeTimeoutMs}ms`
            : `failed (${said || error.message})`
          resolve(how)
        },
      )
    })
    if (failure) {
      await rm(folder, { recursive: true, force: true })
      this.home.logger('sandbox').warn('bubblewrap self-check %s', failure)
      return {
        ok: false,
        reason:
          `bubblewrap at ${program} failed its self-check: it ${failure}. The sandbox needs user namespaces and seccomp; ` +
          'if unprivileged user namespaces are disabled, enable them (sysctl kernel.unprivileged_userns_clone=1, or the ' +
          'AppArmor profile for bwrap on Ubuntu)',
      }
    }
    this.program = program
    this.filterFolder = folder
    return { ok: true }
  }
}

const FILTER_FILE = 'seccomp.bpf'

/** A `/bin/sh` prefix that opens the filter on the fd bwrap reads it from, then execs the rest of the line. */
function withSeccompFd(filter: string): string[] {
  return ['/bin/sh', '-c', `f=$1; shift; exec "$@" ${SECCOMP_FD}<"$f"`, 'dsh-sandbox', filter]
}

function isRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0
}

function checkRequest(argv: string[], policy: SandboxPolicy, cwd: string): string | undefined {
  if (!Array.isArray(argv) || argv.length === 0 || !argv.every((arg) => typeof arg === 'string'))
    return 'argv must be a non-empty list of strings'
  if (!policy || !SANDBOX_MODES.includes(policy.mode)) return `unknown sandbox mode ${JSON.stringify(policy?.mode)}`
  if (!NETWORK_MODES.includes(policy.network)) {
    return `unknown network setting ${JSON.stringify(policy.network)}; expected one of ${NETWORK_MODES.join(', ')}`
  }
  if (policy.network === 'proxy' && policy.mode !== 'off' && typeof policy.proxyToken !== 'string') {
    return 'network "proxy" needs the proxy grant (proxyToken) of the command'
  }
  for (const [field, list] of [
    ['writableRoots', policy.writableRoots],
    ['protectedPaths', policy.protectedPaths],
    ['readableRoots', policy.readableRoots ?? []],
  ] as const) {
    if (!Array.isArray(list)) return `the policy's ${field} is not a list`
    const bad = list.find((item) => typeof item !== 'string' || !path.isAbsolute(item))
    if (bad !== undefined) return `the policy's ${field} holds ${JSON.stringify(bad)}, which is not an absolute path`
  }
  if (policy.tempDir !== undefined && (typeof policy.tempDir !== 'string' || !path.isAbsolute(policy.tempDir))) {
    return `the policy's tempDir ${JSON.stringify(policy.tempDir)} is not an absolute path`
  }
  if (typeof cwd !== 'string' || !path.isAbsolute(cwd))
    return `the working directory ${JSON.stringify(cwd)} is not an absolute path`
  return undefined
}

/** The absolute path of an executable: `name` itself when it holds a slash, else the first match on PATH. */
async function findExecutable(name: string): Promise<string | undefined> {
  const candidates = name.includes('/')
    ? [path.resolve(name)]
    : (process.env.PATH ?? '')
        .split(path.delimiter)
        .filter(Boolean)
        .map((dir) => path.join(dir, name))
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
