import { stat } from 'node:fs/promises'
import { type Context, Schema } from '@dsh/cordis'
import type { ProcessHandle } from '@dsh/subprocess'
import { Shell, ShellError, type ShellRunRequest } from './seam.ts'

export interface BashShellConfig {
  shell: string
  env: Record<string, string>
}

export const Config: Schema<BashShellConfig> = Schema.object({
  shell: Schema.string()
    .min(1)
    .default('bash')
    .description('The shell that runs each command as `<shell> -c <command>`: a name looked up on PATH, or a path.'),
  env: Schema.dict(Schema.string())
    .default({ NO_COLOR: '1', TERM: 'dumb', PAGER: 'cat', GIT_PAGER: 'cat' })
    .description('Variables set for every command, on top of the scrubbed environment.'),
})

/**
 * `ctx.shell` over `ctx.subprocess`: each call is a fresh `bash -c`, wrapped
 * by `ctx.sandbox` unless the policy's mode is `off`. Without a sandbox
 * service a confined command is refused, never run unconfined.
 */
export class BashShell extends Shell {
  static inject = ['subprocess']
  static Config = Config

  private readonly settings: BashShellConfig

  constructor(ctx: Context, config: BashShellConfig) {
    super(ctx)
    this.settings = config
  }

  async run(request: ShellRunRequest): Promise<ProcessHandle> {
    const { command, cwd, policy } = request
    if (typeof command !== 'string') throw new TypeError('shell: command must be a string')
    const info = await stat(cwd).catch(() => undefined)
    if (!info?.isDirectory())
      throw new ShellError('BAD_CWD', `the working directory ${cwd} does not exist or is not a directory`)
    let argv = [this.settings.shell, '-c', command]
    let release: (() => Promise<void>) | undefined
    const sandbox = this.home.get('sandbox')
    if (policy?.mode !== 'off' && !sandbox) {
      throw new ShellError(
        'SANDBOX_REFUSED',
        `the command needs the ${policy?.mode} sandbox, but no sandbox service is running, so it was not run`,
      )
    }
    if (sandbox) {
      // Mode off goes through the sandbox too: it reaps what an unconfined command leaves behind.
      const wrapped = await sandbox.wrap(argv, policy, cwd)
      if ('refused' in wrapped) throw new ShellError('SANDBOX_REFUSED', wrapped.refused)
      argv = wrapped.argv
      release = wrapped.release
    }
    let handle: ProcessHandle
    try {
      handle = this.home.subprocess.run({
        argv,
        cwd,
        env: { ...this.settings.env, ...request.env },
        ...(request.signal ? { signal: request.signal } : {}),
        ...(request.timeoutMs !== undefined ? { timeoutMs: request.timeoutMs } : {}),
      })
    } catch (error) {
      await release?.()
      throw error
    }
    if (release) void handle.done.then(release, release)
    return handle
  }
}
