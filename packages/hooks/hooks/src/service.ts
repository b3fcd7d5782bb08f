import { existsSync, statSync } from 'node:fs'
import path from 'node:path'
import { type Agent, MessageBlocked } from '@dsh/agent'
import { type Context, type JsonValue, Schema, ScopedRegistry, Service } from '@dsh/cordis'
import type { Message } from '@dsh/llm'
import { type Session, textMessage } from '@dsh/session'
import type {} from '@dsh/subprocess'
import { errorMessage, type PreToolDecision, textOf, type ToolExecution, type ToolResult } from '@dsh/tools'
import type {} from '@dsh/workspace-trust'
import { type HookCommand, type HookEventName, matches, readHooksFile } from './files.ts'

declare module '@dsh/cordis' {
  interface Context {
    hooks: Hooks
  }
}

/** The data of a `hook/invoked` session event: a hook command was started. Log only. */
export interface HookInvokedEvent {
  hookEvent: HookEventName
  /** The flavor whose file it came from: `claude-code` or `codex`. */
  source: string
  file: string
  command: string
  callId?: string
}

/** The data of a `hook/result` session event: how a hook command ended and what dsh made of it. Log only. */
export interface HookResultEvent extends HookInvokedEvent {
  exitCode: number | null
  /** `block`, `ask`, `allow` or `none`; `failed` when the hook did not give an answer (its error says why). */
  decision: 'block' | 'ask' | 'allow' | 'none' | 'failed'
  reason?: string
  error?: string
  /** A PreToolUse hook's replacement for the call's input, checked again before the call runs. */
  updatedInput?: JsonValue
}

declare module '@dsh/session' {
  interface SessionEventMap {
    'hook/invoked': HookInvokedEvent
    'hook/result': HookResultEvent
  }
}

/** What a hooks flavor (Claude Code, Codex) tells the runner. */
/** A hook file found on disk, by `Hooks.files`. */
export interface HookFileInfo {
  flavor: string
  file: string
  /** `user` files always run; `project` files only in a trusted folder. */
  scope: 'user' | 'project'
}

export interface HookFlavor {
  /** `claude-code` or `codex`: logged as the source of each hook. */
  name: string
  /** Files that always run: the user's (home) files and the configured ones, absolute. */
  userFiles(): string[]
  /** The project's files for a project folder; they run only once the folder is trusted. */
  projectFiles(projectDir: string): string[]
  /** The names a dsh tool goes by for this flavor's matchers; the first is the payload's `tool_name`. */
  toolNames(tool: string): string[]
  /** Seconds a command may run when its entry names no timeout. */
  defaultTimeoutSec: number
  /** Variables added to a command's environment (e.g. `CLAUDE_PROJECT_DIR`). */
  environment(projectDir: string): Record<string, string>
  /** Fields this flavor adds to every payload (e.g. Codex's `model` and `turn_id`). */
  payloadExtras?(context: PayloadContext): Record<string, JsonValue>
}

export interface PayloadContext {
  session: Session
  turn: number | undefined
}

export interface HooksConfig {
  maxOutputChars: number
  maxStopContinuations: number
}

export const Config: Schema<HooksConfig> = Schema.object({
  maxOutputChars: Schema.natural()
    .min(1)
    .default(65_536)
    .description("How much of a hook's stdout and of its stderr is read; the rest is dropped."),
  maxStopContinuations: Schema.natural()
    .default(3)
    .description('How often Stop hooks may keep one turn going; after that the turn ends and this is reported.'),
})

/** What one command's run amounted to. */
interface Verdict {
  decision: HookResultEvent['decision']
  reason?: string
  context?: string
  error?: string
  updatedInput?: Record<string, unknown>
}

interface Selected {
  flavor: HookFlavor
  hook: HookCommand
  projectDir: string
}

const PERMISSION_MODES: Record<string, string> = {
  'read-only': 'default',
  'workspace-write': 'default',
  'danger-full-access': 'bypassPermissions',
}

/**
 * `ctx.hooks`: runs the hook commands of the registered flavors (Claude Code,
 * Codex) at PreToolUse, PostToolUse and Stop, with the JSON payload those
 * tools send on stdin, and honours their answers. Project hooks run only in
 * a folder the user trusted (`ctx.workspaceTrust`).
 */
export class Hooks extends Service {
  static inject = ['tools', 'sessions', 'subprocess']
  private readonly home: Context
  private readonly settings: HooksConfig
  private readonly flavors = new ScopedRegistry<HookFlavor>('hooks flavor')
  private readonly reported = new Set<string>()
  /** Each hooks file as last read, with the stat it had then. */
  private readonly parsed = new Map<string, { stamp: string; commands: HookCommand[] }>()
  /** Context hooks added before a call ran, for its result. */
  private readonly pendingContext = new WeakMap<ToolExecution, string[]>()
  /** Per session: the turn Stop hooks kept going, and how often. */
  private readonly continued = new Map<string, { turn: number; times: number }>()
  /** Per session: its SessionStart hooks' run, resolving with the context they gave. */
  private readonly started = new Map<string, Promise<string[]>>()
  /** The sessions whose SessionStart context went into a prompt already. */
  private readonly startContextGiven = new Set<string>()

  constructor(ctx: Context, config: HooksConfig) {
    super(ctx, 'hooks')
    this.home = ctx
    this.settings = config
    ctx.sessions.registerEventType(ctx, 'hook/invoked')
    ctx.sessions.registerEventType(ctx, 'hook/result')
    ctx.on('tools/pre-execute', (execution, next) => this.preToolUse(execution, next))
    ctx.on('tools/post-execute', (execution, result, next) => this.postToolUse(execution, result, next))
    ctx.on('agent/turn-stopping', (agent, info) => this.stop(agent as Agent, info))
    ctx.on('agent/created', async (agent) => void (await this.sessionStart(agent, false)))
    ctx.on('agent/user-message', (agent, given, next) => this.userPromptSubmit(agent, given, next))
    ctx.on('session/closed', async (session) => {
      this.continued.delete(session.id)
      this.started.delete(session.id)
      this.startContextGiven.delete(session.id)
    })
  }

  /** Adds a flavor until its plugin is disposed or the disposer is called. */
  register(ctx: Context, flavor: HookFlavor): () => void {
    return this.flavors.register(ctx, flavor.name, flavor)
  }

  /**
   * The hook files of every flavor for a workspace that exist on disk, with the project folder they
   * belong to; project files run only once that folder is trusted.
   */
  files(cwd: string): { projectDir: string; files: HookFileInfo[] } {
    const projectDir = this.home.get('workspaceTrust')?.folderOf(cwd) ?? path.resolve(cwd)
    const files: HookFileInfo[] = []
    for (const flavor of this.flavors.values()) {
      for (const file of flavor.userFiles())
        if (existsSync(file)) files.push({ flavor: flavor.name, file, scope: 'user' })
      for (const file of flavor.projectFiles(projectDir))
        if (existsSync(file)) files.push({ flavor: flavor.name, file, scope: 'project' })
    }
    return { projectDir, files }
  }

  private async preToolUse(execution: ToolExecution, next: () => Promise<PreToolDecision>): Promise<PreToolDecision> {
    // A call a hook rewrote comes back through the pipeline for the checks; its hooks already ran.
    if (execution.rewrittenFrom) return next()
    const { run, call, tool } = execution
    const verdicts = await this.runAll('PreToolUse', run.sessionId, run.cwd, run.signal, tool.name, call.callId, {
      tool_input: execution.args as JsonValue,
      tool_use_id: call.callId,
    })
    const context = verdicts.flatMap((v) => (v.context ? [v.context] : []))
    if (context.length) this.pendingContext.set(execution, context)
    const blocked = verdicts.filter((v) => v.decision === 'block')
    if (blocked.length)
      return {
        kind: 'deny',
        reason: `a PreToolUse hook blocked this call: ${blocked.map((v) => v.reason).join('; ')}`,
      }
    const asked = verdicts.find((v) => v.decision === 'ask')
    if (asked)
      return { kind: 'ask', reason: `a PreToolUse hook asks for approval: ${asked.reason ?? 'no reason given'}` }
    const updated = verdicts.findLast((v) => v.updatedInput)?.updatedInput
    if (updated)
      return { kind: 'rewrite', arguments: updated, reason: 'a PreToolUse hook changed the input of this call' }
    // An allow never widens the preset: the permission check ran before this listener.
    return next()
  }

  private async postToolUse(
    execution: ToolExecution,
    _result: ToolResult,
    next: () => Promise<ToolResult>,
  ): Promise<ToolResult> {
    const current = await next()
    const { run, call, tool } = execution
    const notes = (this.pendingContext.get(execution) ?? []).map((text) => `[PreToolUse hook context] ${text}`)
    // A call the pipeline or a hook refused never ran: there is nothing for PostToolUse to see.
    if (current.error?.code !== 'DENIED' && current.error?.code !== 'CANCELLED') {
      const verdicts = await this.runAll('PostToolUse', run.sessionId, run.cwd, run.signal, tool.name, call.callId, {
        tool_input: execution.args as JsonValue,
        tool_use_id: call.callId,
        tool_response: { content: textOf(current.content), is_error: current.isError },
      })
      for (const verdict of verdicts) {
        if (verdict.decision === 'block') notes.push(`[PostToolUse hook] ${verdict.reason}`)
        if (verdict.context) notes.push(`[PostToolUse hook context] ${verdict.context}`)
      }
    }
    if (!notes.length) return current
    return { ...current, content: [...current.content, { type: 'text', text: `\n\n${notes.join('\n')}` }] }
  }

  /**
   * SessionStart: runs once per session, when its agent is created, or at its
   * first prompt when that comes first (`agent/created` listeners run
   * unawaited); the source is `resume` when the log already holds an earlier
   * turn, else `startup`, and groups match on it. What the hooks print (plain
   * stdout or `additionalContext`) is added to the session's next user message.
   */
  private sessionStart(agent: Agent, inTurn: boolean): Promise<string[]> {
    const session = agent.session
    const running = this.started.get(session.id)
    if (running) return running
    if (session.meta.parentSession !== undefined) return Promise.resolve([])
    const turns = session.last('turn/start')?.data.turn ?? 0
    const source = turns > (inTurn ? 1 : 0) ? 'resume' : 'startup'
    // An agent can be created while the flavors' rows are still starting: their files count too.
    const run = Promise.resolve(this.home.get('loader')?.settle())
      .then(() =>
        this.runAll('SessionStart', session.id, session.meta.cwd, AbortSignal.any([]), source, undefined, { source }),
      )
      .then((verdicts) => verdicts.flatMap((v) => (v.context ? [v.context] : [])))
    this.started.set(session.id, run)
    return run
  }

  /**
   * UserPromptSubmit: runs for each message the user sent, before it is
   * logged. A block refuses it (`MessageBlocked`: the turn ends with the
   * reason, shown to the user, and the model never sees the message); the
   * hooks' context, and that of the SessionStart hooks before it, is added to
   * the message as a text block of its own.
   */
  private async userPromptSubmit(agent: Agent, given: Message, next: () => Promise<Message>): Promise<Message> {
    const message = await next()
    if (given.role !== 'user' || given.source.kind !== 'user') return message
    const session = agent.session
    const context: string[] = []
    if (!this.startContextGiven.has(session.id)) {
      this.startContextGiven.add(session.id)
      for (const text of await this.sessionStart(agent, true)) context.push(`[SessionStart hook context] ${text}`)
    }
    const prompt = given.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('\n')
    const verdicts = await this.runAll(
      'UserPromptSubmit',
      session.id,
      session.meta.cwd,
      AbortSignal.any([]),
      undefined,
      undefined,
      { prompt },
    )
    const blocked = verdicts.filter((v) => v.decision === 'block')
    if (blocked.length)
      throw new MessageBlocked(
        `a UserPromptSubmit hook blocked this prompt: ${blocked.map((v) => v.reason).join('; ')}`,
      )
    for (const v of verdicts) if (v.context) context.push(`[UserPromptSubmit hook context] ${v.context}`)
    if (!context.length) return message
    return { ...message, content: [...message.content, { type: 'text', text: context.join('\n') }] }
  }

  private async stop(agent: Agent, info: { turn: number; signal: AbortSignal }): Promise<void> {
    const session = agent.session
    const state = this.continued.get(session.id)
    const times = state?.turn === info.turn ? state.times : 0
    const verdicts = await this.runAll('Stop', session.id, session.meta.cwd, info.signal, undefined, undefined, {
      stop_hook_active: times > 0,
    })
    const blocked = verdicts.filter((v) => v.decision === 'block')
    if (!blocked.length || info.signal.aborted) return
    if (times >= this.settings.maxStopContinuations) {
      this.home.logger.warn(
        'hooks: Stop hooks kept turn %d of %s going %d times; it ends now (maxStopContinuations)',
        info.turn,
        session.id,
        times,
      )
      return
    }
    this.continued.set(session.id, { turn: info.turn, times: times + 1 })
    const text = `A Stop hook asks you to continue: ${blocked.map((v) => v.reason).join('; ')}`
    agent.steer(textMessage('user', text, { kind: 'plugin', plugin: 'hooks', form: 'notice' }))
  }

  /** Runs every matching command of every flavor at once; resolves with each one's verdict. */
  private async runAll(
    event: HookEventName,
    sessionId: string,
    cwd: string,
    signal: AbortSignal,
    tool: string | undefined,
    callId: string | undefined,
    fields: Record<string, JsonValue>,
  ): Promise<Verdict[]> {
    const session = this.home.sessions.get(sessionId)
    if (!session) return []
    const selected = await this.select(event, session, cwd, signal, tool)
    if (!selected.length) return []
    const turn = currentTurn(session)
    return Promise.all(
      selected.map(({ flavor, hook, projectDir }) => {
        const base: Record<string, JsonValue> = {
          session_id: sessionId,
          transcript_path: null,
          cwd,
          permission_mode: PERMISSION_MODES[this.home.get('permission')?.preset(sessionId) ?? ''] ?? 'default',
          hook_event_name: event,
          ...(tool && event !== 'SessionStart' ? { tool_name: flavor.toolNames(tool)[0] ?? tool } : {}),
          ...fields,
          ...(flavor.payloadExtras?.({ session, turn }) ?? {}),
        }
        return this.runOne(session, flavor, hook, projectDir, base, signal, callId)
      }),
    )
  }

  /** The commands for this event and tool: the user's files always, the project's once its folder is trusted. */
  private async select(
    event: HookEventName,
    session: Session,
    cwd: string,
    signal: AbortSignal,
    tool: string | undefined,
  ): Promise<Selected[]> {
    const out: Selected[] = []
    const trust = this.home.get('workspaceTrust')
    const projectDir = trust?.folderOf(cwd) ?? path.resolve(cwd)
    for (const flavor of this.flavors.values()) {
      // SessionStart groups match on the session's source (startup, resume), which no flavor renames.
      const names = tool && event !== 'SessionStart' ? flavor.toolNames(tool) : []
      const take = (file: string) => {
        for (const hook of this.parse(file)) {
          if (hook.event !== event) continue
          if (tool && !matches(hook.matcher, [...names, tool])) continue
          out.push({ flavor, hook, projectDir })
        }
      }
      for (const file of flavor.userFiles()) take(file)
      const projectFiles = flavor.projectFiles(projectDir).filter((file) => this.parse(file).length > 0)
      if (!projectFiles.length) continue
      const trusted =
        trust !== undefined &&
        (await trust.request(cwd, {
          sessionId: session.meta.parentSession ?? session.id,
          what: `the hooks in ${projectFiles.join(', ')}`,
          signal,
        }))
      if (trusted) for (const file of projectFiles) take(file)
      else
        for (const file of projectFiles)
          this.reportOnce(
            `untrusted:${file}`,
            `hooks: ${file} was not run: the folder ${projectDir} is not trusted (trust it when asked, run headless ` +
              'with --trust-workspace, or list it under trustedFolders on the workspace-trust row)',
          )
    }
    return out
  }

  /**
   * The commands of one file; a malformed file is reported (once per content) and runs nothing. A file is read
   * again only when its stat changed: hooks files are looked up at every event, and most of them do not exist.
   */
  private parse(file: string): HookCommand[] {
    const stamp = fileStamp(file)
    if (stamp === undefined) {
      this.parsed.delete(file)
      return []
    }
    const known = this.parsed.get(file)
    if (known?.stamp === stamp) return known.commands
    let commands: HookCommand[] = []
    try {
      const parsed = readHooksFile(file)
      if (parsed) {
        for (const skipped of parsed.skipped) this.reportOnce(skipped, `hooks: ${skipped}`)
        commands = parsed.commands
      }
    } catch (error) {
      this.reportOnce(`bad:${errorMessage(error)}`, `hooks: ${errorMessage(error)}; its hooks do not run`)
    }
    this.parsed.set(file, { stamp, commands })
    return commands
  }

  private async runOne(
    session: Session,
    flavor: HookFlavor,
    hook: HookCommand,
    projectDir: string,
    payload: Record<string, JsonValue>,
    signal: AbortSignal,
    callId: string | undefined,
  ): Promise<Verdict> {
    const invoked: HookInvokedEvent = {
      hookEvent: hook.event,
      source: flavor.name,
      file: hook.file,
      command: hook.command,
      ...(callId ? { callId } : {}),
    }
    this.log(session, 'hook/invoked', invoked)
    const timeoutSec = hook.timeoutSec ?? flavor.defaultTimeoutSec
    let exitCode: number | null = null
    let verdict: Verdict
    try {
      const child = this.home.subprocess.run({
        argv: ['/bin/sh', '-c', hook.command],
        cwd: session.meta.cwd,
        env: flavor.environment(projectDir),
        stdin: JSON.stringify(payload),
        signal,
        timeoutMs: Math.round(timeoutSec * 1000),
      })
      const [stdout, stderr, exit] = await Promise.all([
        collect(child.stdout, this.settings.maxOutputChars),
        collect(child.stderr, this.settings.maxOutputChars),
        child.done,
      ])
      exitCode = exit.code
      if (exit.timedOut) verdict = { decision: 'failed', error: `timed out after ${timeoutSec}s and was stopped` }
      else if (exit.cancelled) verdict = { decision: 'failed', error: 'stopped: the turn was cancelled' }
      else verdict = interpret(hook.event, exit.code, stdout, stderr)
    } catch (error) {
      verdict = { decision: 'failed', error: errorMessage(error) }
    }
    this.log(session, 'hook/result', {
      ...invoked,
      exitCode,
      decision: verdict.decision,
      ...(verdict.reason ? { reason: verdict.reason } : {}),
      ...(verdict.error ? { error: verdict.error } : {}),
      ...(verdict.updatedInput ? { updatedInput: verdict.updatedInput as JsonValue } : {}),
    })
    if (verdict.decision === 'failed' && !signal.aborted)
      this.home.logger.warn(
        'hooks: %s hook `%s` from %s failed: %s',
        hook.event,
        hook.command,
        hook.file,
        verdict.error,
      )
    return verdict
  }

  private log<K extends 'hook/invoked' | 'hook/result'>(
    session: Session,
    type: K,
    data: K extends 'hook/invoked' ? HookInvokedEvent : HookResultEvent,
  ): void {
    try {
      session.append(type, data as never, { ignorable: true })
    } catch (error) {
      this.home.logger.warn('hooks: could not log %s: %s', type, errorMessage(error))
    }
  }

  private reportOnce(key: string, message: string): void {
    if (this.reported.has(key)) return
    this.reported.add(key)
    this.home.logger.warn('%s', message)
  }
}

/**
 * What a finished command said, by the rules Claude Code and Codex share:
 * exit 2 blocks with stderr as the reason; exit 0 may print a JSON answer
 * (`decision`, `reason`, `continue`/`stopReason`, and `hookSpecificOutput`
 * with `permissionDecision`, `permissionDecisionReason`, `additionalContext`);
 * any other exit is a failure that blocks nothing.
 */
export function interpret(event: HookEventName, code: number | null, stdout: string, stderr: string): Verdict {
  if (code === 2) return { decision: 'block', reason: stderr.trim() || 'a hook blocked it (exit code 2)' }
  if (code !== 0) return { decision: 'failed', error: `exit code ${code}${stderr.trim() ? `: ${stderr.trim()}` : ''}` }
  const text = stdout.trim()
  // Plain output of a prompt or session-start hook is context for the model, as in both tools.
  if (!text.startsWith('{'))
    return text && (event === 'UserPromptSubmit' || event === 'SessionStart')
      ? { decision: 'none', context: text }
      : { decision: 'none' }
  let answer: Record<string, unknown>
  try {
    answer = JSON.parse(text) as Record<string, unknown>
  } catch (error) {
    return { decision: 'failed', error: `its output looks like JSON but is not: ${errorMessage(error)}` }
  }
  const specific = (answer.hookSpecificOutput ?? {}) as Record<string, unknown>
  const say = (value: unknown) => (typeof value === 'string' && value.trim() ? value.trim() : undefined)
  const context = say(specific.additionalContext)
  const withContext = (verdict: Verdict): Verdict => (context ? { ...verdict, context } : verdict)
  if (answer.continue === false)
    return withContext({
      decision: 'block',
      reason: say(answer.stopReason) ?? say(answer.reason) ?? 'a hook stopped it',
    })
  const legacy = answer.decision === 'block' ? 'deny' : answer.decision === 'approve' ? 'allow' : undefined
  const permission = event === 'PreToolUse' ? (specific.permissionDecision ?? legacy) : legacy
  const reason = say(specific.permissionDecisionReason) ?? say(answer.reason)
  if (permission === 'deny') return withContext({ decision: 'block', reason: reason ?? 'a hook refused it' })
  const updated = specific.updatedInput
  const withInput = (verdict: Verdict): Verdict =>
    event === 'PreToolUse' && updated && typeof updated === 'object' && !Array.isArray(updated)
      ? withContext({ ...verdict, updatedInput: updated as Record<string, unknown> })
      : withContext(verdict)
  if (permission === 'ask') return withContext({ decision: 'ask', ...(reason ? { reason } : {}) })
  if (permission === 'allow') return withInput({ decision: 'allow' })
  return withInput({ decision: 'none' })
}

/** Reads a stream to its end, keeping at most `max` characters. */
async function collect(stream: NodeJS.ReadableStream, max: number): Promise<string> {
  let text = ''
  for await (const chunk of stream) {
    if (text.length < max) text += String(chunk).slice(0, max - text.length)
  }
  return text
}

function currentTurn(session: Session): number | undefined {
  return session.last('turn/start')?.data.turn
}

/** What changes when a file is replaced or edited (inode, size, change time), or undefined when there is none. */
function fileStamp(file: string): string | undefined {
  try {
    const stat = statSync(file, { bigint: true, throwIfNoEntry: false })
    return stat ? `${stat.ino}:${stat.size}:${stat.mtimeNs}:${stat.ctimeNs}` : undefined
  } catch {
    // ENOTDIR and the like: no file there.
    return undefined
  }
}
