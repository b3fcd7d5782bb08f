import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { assertNever, type Context, Schema, Service, stringList } from '@dsh/cordis'
import type { ToolCallId } from '@dsh/llm'
import {
  NETWORK_MODES,
  type NetworkDecision,
  type NetworkMode,
  type NetworkTarget,
  unconfinedPolicy,
} from '@dsh/sandbox'
import { errorMessage, type PreToolDecision, type ToolCall, type ToolExecution, type ToolRunContext } from '@dsh/tools'
import type { Session } from '@dsh/session'
import { classify, writeScope } from './classify.ts'
import { PermissionRules, readRuleSection } from './rules.ts'
import {
  PRESETS,
  type ApprovalPolicy,
  type PermissionAnswer,
  type PermissionDecisionEvent,
  type PermissionPreset,
  type SandboxPolicy,
} from './types.ts'

declare module '@dsh/cordis' {
  interface Context {
    permission: PermissionService
  }
}

export interface PermissionConfig {
  preset: PermissionPreset
  approval: ApprovalPolicy
  network: Record<ConfinedPreset, NetworkMode>
  extraWritableRoots: string[]
  /** Absent: none. */
  allow?: string[]
  deny?: string[]
  /** A settings document whose `permission:` section (`allow`, `deny`) adds rules; absent: none. */
  settingsFile?: string
}

/** The presets whose commands run confined, each with a network setting. */
type ConfinedPreset = Exclude<PermissionPreset, 'danger-full-access'>

const networkMode = Schema.union(['off', 'proxy', 'on'] as const)

export const Config: Schema<PermissionConfig> = Schema.object({
  preset: Schema.union(['read-only', 'workspace-write', 'danger-full-access'] as const)
    .default('workspace-write')
    .description('The permission preset sessions start with: what tools may do without asking.'),
  approval: Schema.union(['ask', 'never'] as const)
    .default('ask')
    .description('A call outside the preset asks the surface (ask) or is denied without asking (never).'),
  network: Schema.object({
    'read-only': networkMode.default('off'),
    'workspace-write': networkMode.default('proxy'),
  }).description(
    "The network of sandboxed commands per preset: off (none), proxy (HTTP(S) to allowed hosts through dsh's proxy, " +
      "others asked or denied) or on (outbound, never the host's loopback). Network tools such as web_fetch run without " +
      'asking only under on. A session can override it (setNetwork).',
  ),
  extraWritableRoots: stringList(
    'More folders workspace-write may write, besides the workspace and the temp dir; relative ones resolve against the session cwd.',
  ),
  allow: stringList(
    'Rules for calls that run without asking (bash(npm test*), mcp__github__*, web_fetch(domain:docs.python.org)): ' +
      'they answer for the user where the preset would ask, but never widen the sandbox or the writable folders.',
  ),
  deny: stringList('Rules for calls that never run, under every preset; a deny rule wins over an allow rule.'),
  settingsFile: Schema.string().description(
    'A settings document (settings.yaml) whose permission: section (allow, deny) adds rules after these; ' +
      'the web settings page writes it. Read again whenever it changes.',
  ),
})

export const DECISION_EVENT = 'permission/decision'
export const PRESET_EVENT = 'permission/preset'
export const NETWORK_EVENT = 'permission/network'
export const NETWORK_DECISION_EVENT = 'network/decision'

/** The scopes of "allow for this session" answers about hosts: the host follows. */
const NETWORK_SCOPE = 'network:'

/** A session's identity and workspace, as a tool body sees them in its `ToolRunContext`. */
export interface PermissionRun {
  sessionId: string
  cwd: string
}

/** The call a command belongs to, so that the network proxy can ask the user about it. */
export interface NetworkAskContext {
  call: ToolCall
  run: ToolRunContext
}

export interface SandboxPolicyOptions {
  /** The call declared `escalated` and was approved: it runs unconfined. */
  escalated?: boolean
  /** The command's call: lets the proxy ask about hosts off the allowlist (without it they are denied). */
  call?: NetworkAskContext
}

/**
 * `ctx.permission`: permission presets and the approval round-trip for tool
 * calls. A `tools/pre-execute` listener (outermost) classifies every call
 * against the session's preset; calls outside it are asked through the
 * approval broker (`ctx.tools.approve`), or denied, and logged as
 * `permission/decision`.
 */
export class PermissionService extends Service {
  static Config = Config
  static inject = ['tools', 'sessions']

  private readonly home: Context
  private readonly settings: PermissionConfig
  private readonly overrides = new Map<string, PermissionPreset>()
  private readonly networkOverrides = new Map<string, NetworkMode>()
  /** This process's folder (0700) of session temp folders, made on first use. */
  private tempRoot: string | undefined
  private readonly configRules: PermissionRules
  private fileRules: { key: string; rules: PermissionRules } | undefined

  constructor(ctx: Context, config: PermissionConfig) {
    super(ctx, 'permission')
    this.home = ctx
    this.settings = config
    this.configRules = new PermissionRules(config.allow ?? [], config.deny ?? [])
    ctx.sessions.registerEventType(ctx, DECISION_EVENT)
    ctx.sessions.registerEventType(ctx, PRESET_EVENT)
    ctx.sessions.registerEventType(ctx, NETWORK_EVENT)
    ctx.sessions.registerEventType(ctx, NETWORK_DECISION_EVENT)
    ctx.on('tools/pre-execute', (execution, next) => this.decide(execution, next), { prepend: true })
    if (!this.rules.empty || config.settingsFile) {
      // MCP servers connect in the background; by the end of the first step's waits their tools are known.
      ctx.on('agent/pre-step', async (_agent, _step, next) => {
        const decision = await next()
        this.reportUnknownRules()
        return decision
      })
    }
    ctx.on('session/created', (session) => this.adoptLoggedPreset(session))
    for (const session of ctx.sessions.list()) this.adoptLoggedPreset(session)
    ctx.on('session/closed', async (session) => {
      this.overrides.delete(session.id)
      this.networkOverrides.delete(session.id)
      if (this.tempRoot) rmSync(path.join(this.tempRoot, session.id), { recursive: true, force: true })
    })
    ctx.effect(
      () => () => {
        if (this.tempRoot) rmSync(this.tempRoot, { recursive: true, force: true })
      },
      'permission: remove the session temp folders',
    )
  }

  /**
   * The session's own temp folder (0700), writable under workspace-write and
   * named by `TMPDIR` in its sandboxed commands. It lives in a fresh folder of
   * this process under the system temp dir and is removed when the session
   * closes; the shared /tmp itself is never writable.
   */
  sessionTemp(sessionId: string): string {
    if (!/^[\w-]+$/.test(sessionId)) throw new Error(`permission: ${JSON.stringify(sessionId)} is not a session id`)
    this.tempRoot ??= mkdtempSync(path.join(os.tmpdir(), 'dsh-session-tmp-'))
    const folder = path.join(this.tempRoot, sessionId)
    mkdirSync(folder, { recursive: true, mode: 0o700 })
    return folder
  }

  /** The preset a session runs under: its override (set, or read from its log when it opened), else the configured one. */
  preset(sessionId: string): PermissionPreset {
    return this.overrides.get(sessionId) ?? this.settings.preset
  }

  /**
   * Overrides the preset of one session, and logs it (`permission/preset`)
   * when the session is open, so that it holds after resume. Forgets what the
   * user allowed for that session so far.
   */
  setPreset(sessionId: string, preset: PermissionPreset): void {
    if (!PRESETS.includes(preset))
      throw new Error(`unknown permission preset "${String(preset)}"; expected one of ${PRESETS.join(', ')}`)
    this.overrides.set(sessionId, preset)
    this.home.tools.forgetApprovals(sessionId)
    this.logPreset(sessionId, preset)
  }

  /** Drops a session's override: it runs under the configured preset again. */
  resetPreset(sessionId: string): void {
    this.overrides.delete(sessionId)
    this.home.tools.forgetApprovals(sessionId)
    this.logPreset(sessionId, null)
  }

  /** A session whose log holds a preset or network setting (resumed, forked, or open before this plugin started) runs under it again. */
  private adoptLoggedPreset(session: Session): void {
    const preset = session.last(PRESET_EVENT)?.data.preset
    if (preset && PRESETS.includes(preset)) this.overrides.set(session.id, preset)
    const network = session.last(NETWORK_EVENT)?.data.network
    if (network && NETWORK_MODES.includes(network)) this.networkOverrides.set(session.id, network)
  }

  /** The network setting of a session's sandboxed commands: its override, else the one configured for its preset. */
  network(sessionId: string): NetworkMode {
    const preset = this.preset(sessionId)
    if (preset === 'danger-full-access') return 'on'
    return this.networkOverrides.get(sessionId) ?? this.settings.network[preset]
  }

  /**
   * Overrides the network setting of one session (null: back to the
   * preset's), logged as `permission/network` so that it holds after resume.
   */
  setNetwork(sessionId: string, network: NetworkMode | null): void {
    if (network !== null && !NETWORK_MODES.includes(network)) {
      throw new Error(`unknown network setting "${String(network)}"; expected one of ${NETWORK_MODES.join(', ')}`)
    }
    if (network === null) this.networkOverrides.delete(sessionId)
    else this.networkOverrides.set(sessionId, network)
    this.home.tools.forgetApprovals(sessionId, NETWORK_SCOPE)
    const session = this.home.sessions.get(sessionId)
    if (!session || (session.last(NETWORK_EVENT)?.data.network ?? null) === network) return
    session.append(NETWORK_EVENT, { network }, { ignorable: true })
  }

  /** Appends `permission/preset` unless the log already says so. */
  private logPreset(sessionId: string, preset: PermissionPreset | null): void {
    const session = this.home.sessions.get(sessionId)
    if (!session) return
    if ((session.last(PRESET_EVENT)?.data.preset ?? null) === preset) return
    session.append(PRESET_EVENT, { preset }, { ignorable: true })
  }

  /** The approval policy: `ask` or `never`. */
  approvalPolicy(): ApprovalPolicy {
    return this.settings.approval
  }

  /**
   * The confinement for a command of this session. `escalated` is for a call
   * that declared `escalated` in its access and was approved (pre-execute
   * denies it otherwise): it runs unconfined.
   */
  sandboxPolicy(run: PermissionRun, options: SandboxPolicyOptions = {}): SandboxPolicy {
    const preset = this.preset(run.sessionId)
    if (preset === 'danger-full-access' || options.escalated === true) {
      return unconfinedPolicy()
    }
    const network = this.networkFor(run.sessionId, options.call)
    if (preset === 'read-only') return { mode: 'read-only', writableRoots: [], protectedPaths: [], ...network }
    const scope = writeScope(run.cwd, this.settings.extraWritableRoots, this.sessionTemp(run.sessionId))
    return {
      mode: 'workspace-write',
      writableRoots: [...scope.roots],
      protectedPaths: [...scope.protectedPaths],
      ...network,
      tempDir: scope.temp,
    }
  }

  /**
   * The network part of a command's policy. Under `proxy` the command gets a
   * grant of its own; hosts off the allowlist are asked about through the
   * approval broker (as the command's call) or denied where nobody can
   * ask, and every decision is logged as `network/decision`. Without the
   * sandbox network service, `proxy` falls back to `off`, never to `on`.
   */
  private networkFor(
    sessionId: string,
    call: NetworkAskContext | undefined,
  ): Pick<SandboxPolicy, 'network' | 'proxyToken'> {
    const mode = this.network(sessionId)
    if (mode !== 'proxy') return { network: mode }
    const service = this.home.get('sandboxNetwork')
    if (!service) return { network: 'off' }
    const canAsk =
      call !== undefined &&
      this.settings.approval === 'ask' &&
      !this.isSubagent(sessionId) &&
      this.home.tools.canApprove(sessionId)
    const token = service.grant({
      sessionId,
      ...(canAsk ? { ask: (target: NetworkTarget, signal: AbortSignal) => this.askNetwork(call, target, signal) } : {}),
      record: (decision) => this.recordNetwork(sessionId, call?.call.callId, decision),
    })
    return { network: 'proxy', proxyToken: token }
  }

  private async askNetwork(context: NetworkAskContext, target: NetworkTarget, signal: AbortSignal): Promise<boolean> {
    const { call, run } = context
    const reason = `the command wants to reach ${target.host}:${target.port}, which is not on the network allowlist of sandboxed commands`
    const stop = AbortSignal.any([signal, run.signal])
    const scope = `${NETWORK_SCOPE}${target.host}`
    const verdict = await this.home.tools.approve({ call, reason, scope, run: { ...run, signal: stop } }, stop)
    return verdict.allowed
  }

  private recordNetwork(sessionId: string, callId: ToolCallId | undefined, decision: NetworkDecision): void {
    const session = this.home.sessions.get(sessionId)
    if (!session) return
    try {
      session.append(NETWORK_DECISION_EVENT, { ...(callId ? { callId } : {}), ...decision }, { ignorable: true })
    } catch (error) {
      this.home.logger.warn(
        'permission: could not log a network decision: %s',
        error instanceof Error ? error.message : String(error),
      )
    }
  }

  /**
   * The rules in force: the row's, then the settings file's (re-read when it changed). A malformed
   * settings section is logged, naming the file and entry, and the row's rules alone apply.
   */
  private get rules(): PermissionRules {
    const file = this.settings.settingsFile
    if (!file) return this.configRules
    let key = 'missing'
    try {
      const info = statSync(file)
      key = `${info.mtimeMs}:${info.size}:${info.ino}`
    } catch {}
    if (this.fileRules?.key !== key) {
      let rules = this.configRules
      try {
        const own = readRuleSection(file)
        if (own.allow.length || own.deny.length)
          rules = new PermissionRules(
            [...(this.settings.allow ?? []), ...own.allow],
            [...(this.settings.deny ?? []), ...own.deny],
          )
      } catch (error) {
        this.home.logger.error('permission: the rules in %s are not applied: %s', file, errorMessage(error))
      }
      this.fileRules = { key, rules }
    }
    return this.fileRules.rules
  }

  /** The allow and deny rules in force, in order; `config`: the row's own, without the settings file's. */
  ruleTexts(which: 'all' | 'config' = 'all'): { allow: string[]; deny: string[] } {
    const rules = which === 'config' ? this.configRules : this.rules
    return { allow: rules.allow.map((rule) => rule.text), deny: rules.deny.map((rule) => rule.text) }
  }

  /** Warns once about each rule that matches no registered tool and no configured MCP server. */
  reportUnknownRules(): void {
    const servers =
      this.home
        .get('mcp')
        ?.list()
        .map((server) => server.name) ?? []
    const tools = this.home.tools.list().map((tool) => tool.name)
    for (const rule of this.rules.unreported(tools, servers)) {
      const list = this.rules.deny.includes(rule) ? 'deny' : 'allow'
      this.home.logger.warn(
        'permission: the %s rule "%s" matches no known tool or MCP server (known tools: %s%s)',
        list,
        rule.text,
        tools.join(', ') || 'none',
        servers.length ? `; MCP servers: ${servers.join(', ')}` : '',
      )
    }
  }

  private async decide(execution: ToolExecution, next: () => Promise<PreToolDecision>): Promise<PreToolDecision> {
    const { run } = execution
    const preset = this.preset(run.sessionId)
    const logAs =
      (reason: string) => (decision: PermissionDecisionEvent['decision'], answer?: PermissionAnswer, rule?: string) =>
        this.record(execution, {
          callId: execution.call.callId,
          tool: execution.tool.name,
          preset,
          decision,
          reason,
          ...(answer ? { answer } : {}),
          ...(rule ? { rule } : {}),
        })
    const subject = this.rules.empty ? undefined : await this.rules.subject(execution)
    const denyRule = subject && this.rules.denied(subject)
    if (denyRule) {
      const reason = `tool "${execution.tool.name}" matches the deny rule "${denyRule.text}"`
      logAs(reason)('deny', undefined, denyRule.text)
      return {
        kind: 'deny',
        reason: `${reason}, so the call was not run. Do not retry it or work around it; tell the user what you needed.`,
      }
    }
    const allowRule = subject && this.rules.allowed(subject)
    // Asks from later listeners (a hook's "ask") are answered by an allow rule as the user would.
    const answered = async (): Promise<PreToolDecision> => {
      const decision = await next()
      if (decision.kind !== 'ask' || !allowRule) return decision
      logAs(decision.reason)('allow', undefined, allowRule.text)
      return { kind: 'allow' }
    }
    const verdict = await classify(execution, {
      preset,
      network: this.network(run.sessionId) === 'on',
      extraWritableRoots: this.settings.extraWritableRoots,
      temp: () => this.sessionTemp(run.sessionId),
    })
    if (verdict.inside) return answered()
    const { reason, advice, scope } = verdict
    const log = logAs(reason)
    if (allowRule && verdict.ruleMayAllow) {
      log('allow', undefined, allowRule.text)
      return answered()
    }

    if (this.isSubagent(run.sessionId)) {
      log('deny')
      return {
        kind: 'deny',
        reason: `${reason}. This session is a subagent, and subagents cannot ask for approval, so the call was not run. Do not retry it; say in your final answer what you needed and why.`,
      }
    }
    if (this.settings.approval === 'never') {
      log('deny')
      return {
        kind: 'deny',
        reason: `${reason}. The approval policy is "never", so calls outside the preset are not run. ${advice}`,
      }
    }
    const asked = await this.home.tools.approve({ call: execution.call, reason, scope: `action:${scope}`, run })
    switch (asked.answer) {
      case 'remembered':
        log('allow')
        return next()
      case 'allow-once':
        log('ask', 'allow-once')
        return next()
      case 'allow-session':
        log('ask', 'allow-session')
        // Only while this preset holds: a preset change during the question starts afresh.
        if (this.preset(run.sessionId) !== preset) this.home.tools.forgetApprovals(run.sessionId)
        return next()
      case 'reject': {
        log('ask', 'reject')
        const said = asked.message?.trim() ? ` The user said: ${asked.message.trim()}` : ''
        return { kind: 'deny', reason: `${reason}. The user rejected this call.${said}` }
      }
      case 'no-approver':
        log('ask', 'no-approver')
        return {
          kind: 'deny',
          reason: `${reason}. It needs approval, but ${asked.message}, so it was not run. Do not retry it. ${advice}`,
        }
      case 'cancelled':
        log('ask')
        return { kind: 'deny', reason: `${reason}. The call was cancelled while waiting for approval.` }
      case 'failed':
        log('ask')
        return { kind: 'deny', reason: `${reason}. Asking for approval failed (${asked.message}), so it was not run.` }
      default:
        return assertNever(asked, 'approval verdict')
    }
  }

  /** A session with a parent (a subagent's) never reaches the user: nobody is watching it. */
  private isSubagent(sessionId: string): boolean {
    return this.home.sessions.get(sessionId)?.meta.parentSession !== undefined
  }

  /** Appends a decision to the calling session's log. Never breaks the call: a failure is logged. */
  private record(execution: ToolExecution, data: PermissionDecisionEvent): void {
    const session = this.home.sessions.get(execution.run.sessionId)
    if (!session) {
      this.home.logger.debug(
        'permission: session %s is not open; decision on %s not logged',
        execution.run.sessionId,
        data.callId,
      )
      return
    }
    try {
      session.append(DECISION_EVENT, data, { ignorable: true })
    } catch (error) {
      this.home.logger.warn(
        'permission: could not log the decision on %s: %s',
        data.callId,
        error instanceof Error ? error.message : String(error),
      )
    }
  }
}
