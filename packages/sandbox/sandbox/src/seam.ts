import { type Context, Service } from '@dsh/cordis'

declare module '@dsh/cordis' {
  interface Context {
    sandbox: Sandbox
  }
}

/**
 * How far a command is confined. `read-only`: nothing on disk may change
 * (a private /tmp aside). `workspace-write`: only `writableRoots` may change,
 * except `protectedPaths` inside them. `off`: not confined at all.
 */
export type SandboxMode = 'read-only' | 'workspace-write' | 'off'

export const SANDBOX_MODES: readonly SandboxMode[] = ['read-only', 'workspace-write', 'off']

export interface SandboxPolicy {
  mode: SandboxMode
  /** Absolute paths that stay writable under `workspace-write` (ignored by the other modes). */
  writableRoots: string[]
  /** Absolute paths that stay read-only even inside a writable root, e.g. `<workspace>/.git`. */
  protectedPaths: string[]
  /** Whether the command may use the network. */
  network: boolean
  /**
   * Absolute; the folder `TMPDIR` names inside the sandbox (a writable root,
   * so files in it outlive one command). Without it `TMPDIR` is the private `/tmp`.
   */
  tempDir?: string
}

/**
 * The confined command line, or why the command must not run. `release`, when
 * present, must be called once the command has ended: it removes what the
 * provider put on disk for this command (placeholders over protected paths).
 */
export type WrapResult = { argv: string[]; release?: () => Promise<void> } | { refused: string }

export type SandboxAvailability = { ok: true } | { ok: false; reason: string }

/**
 * `ctx.sandbox`: turns a command line into one that runs confined by a
 * policy. A provider that cannot confine refuses instead of running the
 * command unconfined; only mode `off` passes through untouched.
 */
export abstract class Sandbox extends Service {
  /** The context the provider was mounted on (`this.ctx` is the caller's inside methods). */
  protected readonly home: Context

  constructor(ctx: Context) {
    super(ctx, 'sandbox')
    this.home = ctx
  }

  /**
   * The command line that runs `argv` in `cwd` under `policy`, or a refusal
   * with a reason meant for people. Call `release` (when given) after the command ends.
   */
  abstract wrap(argv: string[], policy: SandboxPolicy, cwd: string): Promise<WrapResult>

  /** Whether this provider can confine commands here (checked once, then cached). */
  abstract available(): Promise<SandboxAvailability>
}
