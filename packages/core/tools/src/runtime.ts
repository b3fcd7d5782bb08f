import { assertNever, type Context, ExclusiveSlot, Schema, ScopedRegistry, Service } from '@dsh/cordis'
import type { ToolSchema } from '@dsh/llm'
import { checkDefinition, errorMessage, parametersJsonSchema } from './define.ts'
import { presentCall } from './describe.ts'
import { capResult, deepFreeze, failure, formatIssues, fromOutput, isToolResult } from './result.ts'
import {
  type ApprovalBroker,
  type ApprovalRequest,
  type ApprovalVerdict,
  type PreToolDecision,
  type ToolCall,
  type ToolCallPresentation,
  type ToolDefinition,
  ToolError,
  type ToolExecution,
  type ToolResult,
  type ToolRunContext,
  type ToolRunOptions,
} from './types.ts'

declare module '@dsh/cordis' {
  interface Context {
    tools: ToolRuntime
  }
  interface Events {
    /**
     * @mode waterfall, before the body of every validated call. Return a
     * decision, or call `next()` to defer (the innermost answer is allow).
     * `ask` goes to the approval broker (`ctx.tools.approve`).
     */
    'tools/pre-execute'(execution: ToolExecution, next: () => Promise<PreToolDecision>): Promise<PreToolDecision>
    /**
     * @mode waterfall, around the body of an allowed call (timeouts, retries,
     * metrics). `next()` runs the body and never throws: a body failure
     * arrives as an error result. The runtime's own timeout wraps this whole
     * waterfall.
     */
    'tools/execute'(execution: ToolExecution, next: () => Promise<ToolResult>): Promise<ToolResult>
    /**
     * @mode waterfall, after every validated call, denied, failed and timed
     * out ones included. `next()` returns `result`; a listener may return a
     * replacement. The output cap applies afterwards.
     */
    'tools/post-execute'(
      execution: ToolExecution,
      result: ToolResult,
      next: () => Promise<ToolResult>,
    ): Promise<ToolResult>
    /** @mode emit: a tool was registered or removed. */
    'tools/changed'(): void
  }
}

export interface ToolsConfig {
  defaultTimeoutMs: number
  maxResultChars: number
  abortGraceMs: number
}

export const Config: Schema<ToolsConfig> = Schema.object({
  defaultTimeoutMs: Schema.natural()
    .min(1)
    .default(120_000)
    .description('Per-call timeout in milliseconds for tools that do not declare their own.'),
  maxResultChars: Schema.natural()
    .min(1)
    .default(100_000)
    .description('Text longer than this in one tool result is cut, with a note saying how much was dropped.'),
  abortGraceMs: Schema.natural()
    .default(5_000)
    .description(
      'After a timeout or cancel aborts a tool, how long to wait for its body to wind down before reporting.',
    ),
})

interface RegisteredTool {
  definition: ToolDefinition
  schema: ToolSchema
}

/**
 * `ctx.tools`: the registry of model-facing tools and the guarded pipeline
 * every call goes through. `execute` never throws.
 */
export class ToolRuntime extends Service {
  static Config = Config

  private readonly home: Context
  private readonly settings: ToolsConfig
  private readonly registry = new ScopedRegistry<RegisteredTool>('tool')
  private readonly broker = new ExclusiveSlot<ApprovalBroker>('approval broker')
  private readonly restrictions = new Map<string, Set<{ allow: (toolName: string) => boolean }>>()

  constructor(ctx: Context, config: ToolsConfig) {
    super(ctx, 'tools')
    this.home = ctx
    this.settings = config
  }

  /** Serves `definition` until the registering plugin is disposed or the disposer is called. */
  register(ctx: Context, definition: ToolDefinition): () => void {
    checkDefinition(definition)
    const entry: RegisteredTool = {
      definition,
      schema: {
        name: definition.name,
        description: definition.description,
        parameters: parametersJsonSchema(definition),
      },
    }
    let live = false
    // Created before the entry so that, disposed in reverse order, the notice follows the removal.
    const notice = ctx.effect(() => () => void (live && this.changed()), `tool ${definition.name} notice`)
    let off: () => void
    try {
      off = this.registry.register(ctx, definition.name, entry)
    } catch (error) {
      void notice()
      throw error
    }
    live = true
    this.changed()
    return () => {
      off()
      void notice()
    }
  }

  get(name: string): ToolDefinition | undefined {
    return this.registry.get(name)?.definition
  }

  list(): ToolDefinition[] {
    return this.sorted().map((entry) => entry.definition)
  }

  /**
   * How surfaces show a call (title, ACP kind, view of the result) from the
   * tool's own presentation; a tool that has none, or is not registered
   * (any more), shows generically. `cwd` is the session's workspace.
   */
  present(call: Pick<ToolCall, 'name' | 'arguments'>, cwd: string): ToolCallPresentation {
    return presentCall(call.name, this.get(call.name), call.arguments, cwd)
  }

  /** What the model is told about every tool, sorted by name; with a session id, only the tools that session may use. */
  schemas(sessionId?: string): ToolSchema[] {
    return this.sorted()
      .filter((entry) => this.allows(sessionId, entry.definition.name))
      .map((entry) => entry.schema)
  }

  /**
   * Limits the tools one session is shown and may call to those `allow`
   * accepts (a subagent's subset), until the registering plugin is disposed or
   * the disposer is called. Several restrictions on one session all apply; a
   * call to a tool outside them is refused as `TOOL_NOT_AVAILABLE`.
   */
  restrict(ctx: Context, sessionId: string, allow: (toolName: string) => boolean): () => void {
    const slot = { allow }
    const dispose = ctx.effect(() => {
      let slots = this.restrictions.get(sessionId)
      if (!slots) this.restrictions.set(sessionId, (slots = new Set()))
      slots.add(slot)
      return () => {
        slots.delete(slot)
        if (slots.size === 0 && this.restrictions.get(sessionId) === slots) this.restrictions.delete(sessionId)
      }
    }, `tool restriction of ${sessionId}`)
    return () => void dispose()
  }

  /** Whether the session's restrictions (if any) let it use the tool; a throwing filter counts as no. */
  allows(sessionId: string | undefined, toolName: string): boolean {
    const slots = sessionId === undefined ? undefined : this.restrictions.get(sessionId)
    if (!slots) return true
    for (const slot of slots) {
      try {
        if (slot.allow(toolName) !== true) return false
      } catch {
        return false
      }
    }
    return true
  }

  /** True only when the tool says exactly `true` for these (parsed, valid) arguments. */
  isConcurrencySafe(name: string, rawArguments: string): boolean {
    const definition = this.get(name)
    if (!definition?.isConcurrencySafe) return false
    try {
      const parsed = definition.parameters.safeParse(parseArguments(rawArguments))
      return parsed.success && definition.isConcurrencySafe(parsed.data) === true
    } catch {
      return false
    }
  }

  /**
   * Installs the one approval broker (the conversation service's), until its
   * plugin is disposed or the disposer is called. A second one throws.
   */
  setBroker(ctx: Context, broker: ApprovalBroker): () => void {
    return this.broker.set(ctx, broker)
  }

  /**
   * Asks the broker whether a call may run (or recalls an earlier "allow for
   * this session"). Without a broker nobody can be asked: not allowed. Never throws.
   */
  async approve(request: ApprovalRequest, signal: AbortSignal = request.run.signal): Promise<ApprovalVerdict> {
    const broker = this.broker.current
    if (!broker) return { allowed: false, answer: 'no-approver', message: 'no one is available to approve it here' }
    try {
      return await broker.approve(request, signal)
    } catch (error) {
      if (signal.aborted)
        return { allowed: false, answer: 'cancelled', message: 'cancelled while waiting for approval' }
      return { allowed: false, answer: 'failed', message: errorMessage(error) }
    }
  }

  /** Whether a user could be asked to approve calls of this session now. */
  canApprove(sessionId: string): boolean {
    return this.broker.current?.canAsk(sessionId) === true
  }

  /** Forgets what the user allowed for a session (only the scopes starting with `scopePrefix`, when given). */
  forgetApprovals(sessionId: string, scopePrefix?: string): void {
    this.broker.current?.forget(sessionId, scopePrefix)
  }

  /** Runs one call through the pipeline. Never throws: every outcome is a result. */
  async execute(call: ToolCall, run: ToolRunOptions): Promise<ToolResult> {
    let result: ToolResult
    try {
      result = await this.pipeline(call, run)
    } catch (error) {
      this.home.logger.warn('tool pipeline failed for %s: %s', call?.name, errorMessage(error))
      result = failure('PIPELINE_ERROR', `the tool pipeline failed: ${errorMessage(error)}`)
    }
    return capResult(result, this.settings.maxResultChars)
  }

  private async pipeline(call: ToolCall, run: ToolRunOptions): Promise<ToolResult> {
    if (run.signal.aborted) return cancelled()
    const entry = this.registry.get(call.name)
    if (!entry || !this.allows(run.sessionId, call.name)) {
      const known = this.schemas(run.sessionId).map((tool) => tool.name)
      const available = known.length ? `Available tools: ${known.join(', ')}.` : 'No tools are available.'
      if (entry)
        return failure('TOOL_NOT_AVAILABLE', `tool "${call.name}" is not available in this session. ${available}`)
      return failure('UNKNOWN_TOOL', `there is no tool named "${call.name}". ${available}`)
    }
    const { definition } = entry

    let raw: unknown
    try {
      raw = parseArguments(call.arguments)
    } catch (error) {
      return failure(
        'INVALID_JSON',
        `the arguments for tool "${definition.name}" are not valid JSON (${errorMessage(error)}). Send one JSON object.`,
      )
    }
    const parsed = await definition.parameters.safeParseAsync(raw)
    if (!parsed.success) {
      return failure(
        'INVALID_ARGUMENTS',
        `invalid arguments for tool "${definition.name}":\n${formatIssues(parsed.error.issues)}\nFix these and call the tool again.`,
      )
    }

    const controller = new AbortController()
    const forward = () => controller.abort(run.signal.reason)
    run.signal.addEventListener('abort', forward, { once: true })
    try {
      const context: ToolRunContext = {
        ...run,
        callId: call.callId,
        toolName: definition.name,
        signal: controller.signal,
      }
      const execution: ToolExecution = Object.freeze({
        call: Object.freeze({ ...call }),
        tool: definition,
        args: deepFreeze(parsed.data as Record<string, unknown>),
        run: Object.freeze(context),
      })
      const authorized = await this.authorize(execution, run.signal)
      const ran = authorized.execution
      const result =
        authorized.blocked ?? (run.signal.aborted ? cancelled() : await this.runBody(ran, controller, run.signal))
      const final = await stage('tools/post-execute', () =>
        this.home.waterfall('tools/post-execute', ran, result, async () => result),
      )
      if (!isToolResult(final))
        throw new Error('a tools/post-execute listener returned something that is not a tool result')
      return final
    } finally {
      run.signal.removeEventListener('abort', forward)
    }
  }

  /**
   * The execution that may run (a rewrite replaces it), or `blocked`: the
   * result that stands in for a call that must not run.
   */
  private async authorize(
    execution: ToolExecution,
    signal: AbortSignal,
  ): Promise<{ execution: ToolExecution; blocked?: ToolResult }> {
    const decision = await stage('tools/pre-execute', () =>
      this.home.waterfall('tools/pre-execute', execution, async (): Promise<PreToolDecision> => ({ kind: 'allow' })),
    )
    const name = execution.tool.name
    switch (decision?.kind) {
      case 'allow':
        return { execution }
      case 'deny':
        return { execution, blocked: denied(name, decision.reason) }
      case 'ask': {
        const reason = String(decision.reason ?? 'this call needs approval')
        const scope = decision.scope ?? `tool:${name}\u0000${reason}`
        const verdict = await this.approve({ call: execution.call, reason, scope, run: execution.run }, signal)
        return verdict.allowed ? { execution } : { execution, blocked: refusal(name, reason, verdict) }
      }
      case 'rewrite': {
        if (execution.rewrittenFrom)
          return { execution, blocked: denied(name, `${decision.reason}, but a call's arguments may be changed once`) }
        const parsed = await execution.tool.parameters.safeParseAsync(decision.arguments)
        if (!parsed.success) {
          const issues = formatIssues(parsed.error.issues)
          return { execution, blocked: denied(name, `${decision.reason}, to arguments the tool refuses:\n${issues}`) }
        }
        const rewritten: ToolExecution = Object.freeze({
          ...execution,
          call: Object.freeze({ ...execution.call, arguments: JSON.stringify(parsed.data) }),
          args: deepFreeze(parsed.data as Record<string, unknown>),
          rewrittenFrom: execution.args,
        })
        // The new arguments face every check again: the permission of a path or command is theirs.
        return this.authorize(rewritten, signal)
      }
      default:
        return assertNever(decision as never, 'tools/pre-execute decision')
    }
  }

  private async runBody(
    execution: ToolExecution,
    controller: AbortController,
    callerSignal: AbortSignal,
  ): Promise<ToolResult> {
    const { tool, run } = execution
    const timeoutMs = tool.timeoutMs ?? this.settings.defaultTimeoutMs
    const body = async (): Promise<ToolResult> => {
      try {
        return fromOutput(tool.name, await tool.execute(execution.args, run))
      } catch (error) {
        if (error instanceof ToolError) return failure(error.code, error.message)
        return failure('TOOL_ERROR', `tool "${tool.name}" failed: ${errorMessage(error)}`)
      }
    }
    type Outcome =
      | { kind: 'done'; result: ToolResult }
      | { kind: 'failed'; error: unknown }
      | { kind: 'timeout' }
      | { kind: 'cancel' }
    const work: Promise<Outcome> = stage('tools/execute', () =>
      this.home.waterfall('tools/execute', execution, body),
    ).then(
      (result): Outcome => ({ kind: 'done', result }),
      (error: unknown): Outcome => ({ kind: 'failed', error }),
    )
    let timer: NodeJS.Timeout | undefined
    let onCancel: (() => void) | undefined
    const outcome = await new Promise<Outcome>((resolve) => {
      void work.then(resolve)
      timer = setTimeout(() => resolve({ kind: 'timeout' }), timeoutMs)
      onCancel = () => resolve({ kind: 'cancel' })
      if (callerSignal.aborted) onCancel()
      else callerSignal.addEventListener('abort', onCancel, { once: true })
    })
    clearTimeout(timer)
    if (onCancel) callerSignal.removeEventListener('abort', onCancel)

    switch (outcome.kind) {
      case 'done':
        return outcome.result
      case 'failed':
        throw outcome.error
      case 'timeout':
        controller.abort(new DOMException(`tool call timed out after ${timeoutMs}ms`, 'TimeoutError'))
        await this.windDown(work)
        return failure('TIMEOUT', `tool "${tool.name}" timed out after ${timeoutMs}ms and was stopped.`)
      case 'cancel':
        controller.abort(callerSignal.reason)
        await this.windDown(work)
        return cancelled()
      default:
        return assertNever(outcome, 'tool outcome')
    }
  }

  /** Gives an aborted body a bounded time to finish (kill its processes, close its files). */
  private async windDown(work: Promise<unknown>): Promise<void> {
    let timer: NodeJS.Timeout | undefined
    await Promise.race([
      work,
      new Promise<void>((resolve) => (timer = setTimeout(resolve, this.settings.abortGraceMs))),
    ])
    clearTimeout(timer)
  }

  private sorted(): RegisteredTool[] {
    return this.registry
      .values()
      .sort((a, b) => (a.definition.name < b.definition.name ? -1 : a.definition.name > b.definition.name ? 1 : 0))
  }

  private changed(): void {
    try {
      this.home.emit('tools/changed')
    } catch (error) {
      this.home.logger.warn('a tools/changed listener failed: %s', errorMessage(error))
    }
  }
}

/** Model arguments as a value. Empty text counts as `{}`: models send it for tools without parameters. */
function parseArguments(text: string): unknown {
  if (typeof text !== 'string') return text
  if (text.trim() === '') return {}
  return JSON.parse(text) as unknown
}

function denied(toolName: string, reason: string): ToolResult {
  return failure('DENIED', `permission to run tool "${toolName}" was denied: ${reason}`)
}

function cancelled(): ToolResult {
  return failure('CANCELLED', 'the tool call was cancelled before it finished.')
}

/** The result standing in for a call the broker did not allow. */
function refusal(toolName: string, reason: string, verdict: Exclude<ApprovalVerdict, { allowed: true }>): ToolResult {
  switch (verdict.answer) {
    case 'reject': {
      const said = verdict.message?.trim() ? ` The user said: ${verdict.message.trim()}` : ''
      return denied(toolName, `${reason}. The user rejected this call.${said}`)
    }
    case 'no-approver':
      return denied(
        toolName,
        `${reason}. This call needs approval, but ${verdict.message}, so it was not run. Do not retry it; continue without it or tell the user.`,
      )
    case 'failed':
      return denied(toolName, `${reason}. Asking for approval failed (${verdict.message}), so the call was not run.`)
    case 'cancelled':
      return cancelled()
    default:
      return assertNever(verdict, 'approval verdict')
  }
}

/** Runs one waterfall; a throw (sync or async) names the stage it came from. */
async function stage<T>(name: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run()
  } catch (error) {
    throw new Error(`${name}: ${errorMessage(error)}`, { cause: error })
  }
}
