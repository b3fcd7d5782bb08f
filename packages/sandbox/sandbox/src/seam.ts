import { providerService } from '@dsh/cordis'

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

/** No confinement (danger-full-access, an approved escalation, a terminal): the sandbox only reaps. */
export function unconfinedPolicy(): SandboxPolicy {
  return { mode: 'off', writableRoots: [], protectedPaths: [], network: 'on' }
}

/** How a confined command reaches the network; see `SandboxPolicy.network`. */
export type NetworkMode = 'off' | 'proxy' | 'on'

export const NETWORK_MODES: readonly NetworkMode[] = ['off', 'proxy', 'on']

export interface SandboxPolicy {
  mode: SandboxMode
  /** Absolute paths that stay writable under `workspace-write` (ignored by the other modes). */
  writableRoots: string[]
  /** Absolute paths that stay read-only even inside a writable root, e.g. `<workspace>/.git`. */
  protectedPaths: string[]
  /**
   * Absolute paths the command may read although the sandbox would hide them
   * otherwise (under the private /tmp): the installation of a program dsh
   * starts itself, such as a language server. Never dsh's hidden paths.
   */
  readableRoots?: string[]
  /**
   * The command's network: `off` none at all; `proxy` only HTTP(S) through
   * dsh's filtering proxy (`proxyToken` names the grant the proxy knows the
   * command by); `on` outbound connections, but never the host's loopback.
   * Mode `off` of the sandbox ignores it (unconfined).
   */
  network: NetworkMode
  /** With network `proxy`: the token from `ctx.sandboxNetwork.grant()`. */
  proxyToken?: string
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

export interface WrapOptions {
  /** The command runs on a terminal (a PTY) and must keep it as its controlling terminal. Mode `off` only. */
  interactive?: boolean
}

export type SandboxAvailability = { ok: true } | { ok: false; reason: string }

/**
 * `ctx.sandbox`: turns a command line into one that runs confined by a
 * policy. A provider that cannot confine refuses instead of running the
 * command unconfined; only mode `off` passes through untouched.
 */
export abstract class Sandbox extends providerService('sandbox') {
  /**
   * The command line that runs `argv` in `cwd` under `policy`, or a refusal
   * with a reason meant for people. Call `release` (when given) after the command ends.
   */
  abstract wrap(argv: string[], policy: SandboxPolicy, cwd: string, options?: WrapOptions): Promise<WrapResult>

  /** Whether this provider can confine commands here (checked once, then cached). */
  abstract available(): Promise<SandboxAvailability>
}

/** A host and port a confined command asked the proxy for. */
export interface NetworkTarget {
  host: string
  port: number
}

/** One answer of the proxy, for the session log (`network/decision`). */
export interface NetworkDecision extends NetworkTarget {
  decision: 'allow' | 'deny'
  /** What decided: the allowlist, the user (asked, or remembered for the session), or the address rules. */
  by: 'allowlist' | 'user' | 'address' | 'policy'
  reason?: string
}

/** What the proxy needs to answer for one command: whom to ask about a host off the allowlist, where to log. */
export interface NetworkGrantRequest {
  sessionId: string
  /** Resolves true when the user allows the target; absent or false: denied. */
  ask?: (target: NetworkTarget, signal: AbortSignal) => Promise<boolean>
  /** Called for every decision the proxy makes for this grant. */
  record?: (decision: NetworkDecision) => void
}

/** Where a command with network `proxy` or `on` runs, and what it must be told. */
export interface NetworkAttachment {
  /** A path naming the network namespace to join (for `nsenter --net=`). */
  namespace: string
  /** When the namespace belongs to a user namespace of its own (dsh is not root): that one, entered first. */
  userNamespace?: string
  /** Variables for the command, e.g. `HTTPS_PROXY`. */
  env: Record<string, string>
  /** A file to bind at /etc/resolv.conf inside the sandbox, when the namespace has its own DNS. */
  resolvConf?: string
}

declare module '@dsh/cordis' {
  interface Context {
    sandboxNetwork: SandboxNetwork
  }
}

/**
 * `ctx.sandboxNetwork`: the network namespaces confined commands join for
 * network `proxy` and `on`, and the filtering proxy behind `proxy`.
 */
export abstract class SandboxNetwork extends providerService('sandboxNetwork') {
  /** Registers one command's grant and returns the token its proxy settings carry. */
  abstract grant(request: NetworkGrantRequest): string

  /** The namespace and settings for a command with this network mode, or why it cannot have them. */
  abstract attach(mode: 'proxy' | 'on', token?: string): Promise<NetworkAttachment | { refused: string }>
}
