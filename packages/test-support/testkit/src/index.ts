import { type ChildProcess, spawn } from 'node:child_process'
import { chmodSync, existsSync, mkdtempSync, rmdirSync } from 'node:fs'
import { mkdir, mkdtemp, realpath, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { format } from 'node:util'

export { chromiumArgs, chromiumPath } from './chromium.ts'
export { LEAKY_ENVIRONMENT, withEnvironment } from './environment.ts'
export { type PathFlipper, startPathFlipper } from './flipper.ts'
export { type HttpTestHost, startHttpTestHost } from './http-host.ts'
export { chatMessage, STEP_OPENING, textBlock } from './messages.ts'
export { disposeTestRoot, mountPlugin } from './plugin.ts'

/** The repository root, found from this file (src/ or lib/ of packages/test-support/testkit). */
export const repoRoot = path.resolve(fileURLToPath(new URL('.', import.meta.url)), '../../../..')

/**
 * The built `dsh` command users run: a shell launcher that starts node from
 * the startup snapshot, or runs `dshBin` when the snapshot does not fit.
 */
export const dshLauncher = path.join(repoRoot, 'apps/cli/lib/dsh')

/** The plain entry, for running under a chosen node: `node apps/cli/lib/bin.js`. */
export const dshBin = path.join(repoRoot, 'apps/cli/lib/bin.js')

export function assertBuilt(): void {
  for (const file of [dshLauncher, dshBin]) {
    if (!existsSync(file)) throw new Error(`${file} is missing: run pnpm build before the end-to-end tests`)
  }
}

/** A private temporary folder, removed by `dispose`. */
export async function tempDir(prefix = 'dsh-test-'): Promise<{ dir: string; dispose: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix))
  return { dir, dispose: () => rm(dir, { recursive: true, force: true }) }
}

export interface TempProject {
  /** The folder that holds the others (its real path). */
  base: string
  /** `<base>/home`, made. */
  home: string
  /** `<base>/project`, a git project: it holds a `.git` folder. */
  project: string
  /** A folder inside the project, made. */
  workspace: string
  dispose: () => Promise<void>
}

/** A temporary git project with a workspace folder at `workspacePath` inside it, and a home folder beside it. */
export async function tempProject(prefix: string, ...workspacePath: string[]): Promise<TempProject> {
  const base = await realpath(await mkdtemp(path.join(os.tmpdir(), prefix)))
  const home = path.join(base, 'home')
  const project = path.join(base, 'project')
  const workspace = path.join(project, ...workspacePath)
  for (const dir of [home, path.join(project, '.git'), workspace]) await mkdir(dir, { recursive: true })
  return { base, home, project, workspace, dispose: () => rm(base, { recursive: true, force: true }) }
}

export interface DshOptions {
  home: string
  cwd?: string
  env?: Record<string, string | undefined>
  input?: string
  /**
   * Run dsh as this unprivileged user (the test runs as root). The checkout is
   * bind-mounted at a folder anyone may enter, in a mount namespace of the
   * child's own, so the user can run the bin wherever the checkout lives.
   */
  asUser?: { uid: number; gid: number }
}

/** The command line that runs the launcher with `args`, as the given user when asked. */
function launchLine(args: string[], options: DshOptions): { program: string; argv: string[]; cleanup?: () => void } {
  if (!options.asUser) return { program: dshLauncher, argv: args }
  const mount = mkdtempSync(path.join(os.tmpdir(), 'dsh-checkout-'))
  chmodSync(mount, 0o755)
  const launcher = path.join(mount, path.relative(repoRoot, dshLauncher))
  const { uid, gid } = options.asUser
  // A tmpfs anyone may enter, with each top-level entry of the checkout bound into it: the checkout's own
  // folder may be private (mktemp -d), its contents are not.
  const script = [
    'mount -t tmpfs -o mode=755 dsh-checkout "$2" || exit 1',
    'for entry in "$1"/* "$1"/.[!.]*; do',
    '  [ -e "$entry" ] || continue',
    '  target="$2/$(basename "$entry")"',
    '  if [ -d "$entry" ]; then mkdir "$target"; else : > "$target"; fi',
    '  mount --bind "$entry" "$target" || exit 1',
    'done',
    'shift 2',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a bash script, not a template
    'exec setpriv --reuid="$1" --regid="$2" --clear-groups "$3" "${@:4}"',
  ].join('\n')
  return {
    program: 'unshare',
    argv: [
      '--mount',
      '--propagation',
      'private',
      'bash',
      '-c',
      script,
      'dsh-as-user',
      repoRoot,
      mount,
      String(uid),
      String(gid),
      launcher,
      ...args,
    ],
    // The bind mount ends with the child's namespace; the empty folder stays behind until then.
    cleanup: () => rmdirSync(mount),
  }
}

/**
 * A child environment without the developer's own dsh settings. Session
 * titles are off unless a test turns them on (`DSH_SESSION_TITLES: 'on'`):
 * their side call would take replies scripted for the agent.
 */
function childEnv(options: DshOptions): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, DSH_HOME: options.home }
  for (const key of Object.keys(env)) if (key.startsWith('DSH_') && key !== 'DSH_HOME') delete env[key]
  delete env.DEEPSEEK_API_KEY
  delete env.DEEPSEEK_BASE_URL
  env.DSH_SESSION_TITLES = 'off'
  Object.assign(env, options.env)
  return env
}

export interface DshResult {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

export interface WaitOptions {
  stream?: 'stdout' | 'stderr'
  from?: number
  timeoutMs?: number
}

/** A running `dsh` process whose output is collected as it arrives. */
export class DshProcess {
  readonly child: ChildProcess
  stdout = ''
  stderr = ''
  readonly exited: Promise<DshResult>

  constructor(args: string[], options: DshOptions) {
    assertBuilt()
    const { program, argv, cleanup } = launchLine(args, options)
    this.child = spawn(program, argv, {
      cwd: options.cwd ?? options.home,
      env: childEnv(options),
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    this.child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (this.stdout += chunk))
    this.child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (this.stderr += chunk))
    if (options.input !== undefined) this.child.stdin?.end(options.input)
    this.exited = new Promise((resolve) => {
      this.child.on('close', (code, signal) => {
        cleanup?.()
        resolve({ code, signal, stdout: this.stdout, stderr: this.stderr })
      })
    })
  }

  /** How much output a stream has so far; pass it to `waitFor` to look only at what comes later. */
  mark(stream: 'stdout' | 'stderr' = 'stderr'): number {
    return this[stream].length
  }

  /**
   * Resolves once `pattern` appears in stderr (or stdout with `stream: 'stdout'`)
   * after offset `from`; rejects if the process exits first.
   */
  async waitFor(
    pattern: RegExp,
    { stream = 'stderr', from = 0, timeoutMs = 20_000 }: WaitOptions = {},
  ): Promise<RegExpMatchArray> {
    const deadline = Date.now() + timeoutMs
    let finished = false
    void this.exited.then(() => (finished = true))
    for (;;) {
      const match = this[stream].slice(from).match(pattern)
      if (match) return match
      if (finished)
        throw new Error(
          `dsh exited before ${pattern} appeared on ${stream}.\nstdout:\n${this.stdout}\nstderr:\n${this.stderr}`,
        )
      if (Date.now() > deadline)
        throw new Error(
          `timed out waiting for ${pattern} on ${stream}.\nstdout:\n${this.stdout}\nstderr:\n${this.stderr}`,
        )
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }

  kill(signal: NodeJS.Signals = 'SIGTERM'): Promise<DshResult> {
    this.child.kill(signal)
    return this.exited
  }
}

export function startDsh(args: string[], options: DshOptions): DshProcess {
  return new DshProcess(args, options)
}

/**
 * `dsh web --port 0 --no-open` from the built bin, once it prints where it
 * listens; `origin` is that address without a token, e.g. http://127.0.0.1:41234.
 */
export async function startDshWeb(
  options: DshOptions,
  timeoutMs = 60_000,
): Promise<{ dsh: DshProcess; origin: string }> {
  const dsh = startDsh(['web', '--port', '0', '--no-open'], options)
  try {
    const match = await dsh.waitFor(/dsh web: (http:\/\/\S+)/, { stream: 'stdout', timeoutMs })
    return { dsh, origin: new URL(match[1] as string).origin }
  } catch (error) {
    await dsh.kill()
    throw error
  }
}

/** Runs `dsh` to completion. */
export function runDsh(args: string[], options: DshOptions): Promise<DshResult> {
  return new DshProcess(args, options).exited
}

/** What `collectWarnings` needs of a cordis context: its logger (typed here so testkit needs no cordis). */
export interface LoggingContext {
  logger: { exporter(exporter: { export(message: { type: string; args: unknown[] }): void }): unknown }
}

/**
 * The warnings and errors `ctx` and the plugins under it log from now on, one
 * formatted string each, in order; the returned array fills as they come.
 */
export function collectWarnings(ctx: LoggingContext): string[] {
  const warnings: string[] = []
  ctx.logger.exporter({
    export: (message) => {
      if (message.type === 'warn' || message.type === 'error') warnings.push(format(...message.args))
    },
  })
  return warnings
}
