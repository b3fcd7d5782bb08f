import { randomUUID } from 'node:crypto'
import {
  type Agent,
  type AgentOptions,
  type AgentStatus,
  type Delivery,
  MessageBlocked,
  type StepInfo,
  type TurnOutcome,
} from '@dsh/agent'
import { type Context, emitIsolated } from '@dsh/cordis'
import {
  BlockAssembler,
  type ContentBlock,
  type FinishReason,
  type LlmFailure,
  type Message,
  type ToolCallId,
  type ToolSchema,
} from '@dsh/llm'
import { type CancelCause, newMessageId, type Session, type SessionEvent, textMessage } from '@dsh/session'
import { PromptState } from '@dsh/system-prompt'
import type { ToolResult } from '@dsh/tools'

export interface LoopConfig {
  maxParallelToolCalls: number
  maxStepsPerTurn: number
}

type Reply =
  | { kind: 'message'; blocks: ContentBlock[]; finish: FinishReason }
  | { kind: 'failed'; failure: LlmFailure }
  | { kind: 'aborted' }

type ToolCall = Extract<ContentBlock, { type: 'tool-call' }>

const internal = (message: string): LlmFailure => ({ code: 'INTERNAL', message })

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve()
    const timer = setTimeout(done, ms)
    signal.addEventListener('abort', done, { once: true })
    function done() {
      clearTimeout(timer)
      signal.removeEventListener('abort', done)
      resolve()
    }
  })
}

/**
 * The turn/step driver. A turn claims queued input, then runs steps (one
 * model request plus the tools it calls) until nothing is owed. Every step
 * is recorded in the session log; every tool call gets exactly one result.
 */
export class LoopAgent implements Agent {
  readonly id
  readonly session: Session
  readonly ctx: Context
  options: AgentOptions
  status: AgentStatus = 'idle'
  private readonly config: LoopConfig
  private nextTurn: Message[] = []
  private nextStep: Message[] = []
  private running: Promise<void> | undefined
  private controller: AbortController | undefined
  private cause: CancelCause | undefined
  private stopped = false
  private headerThisRun = false
  /** The sections this agent's session has rendered: the prompt is reused, byte for byte, until one must change. */
  private readonly promptState = new PromptState()
  /** The last `request/header` by seq, and its JSON without `reason`: tool schemas are large, stringify them once a step. */
  private headerKey: { seq: number; key: string } | undefined
  private openStep: { turn: number; step: number } | undefined
  private readonly toolState = new Map<string, unknown>()

  constructor(ctx: Context, session: Session, options: AgentOptions, config: LoopConfig) {
    this.ctx = ctx
    this.session = session
    this.id = session.id
    this.options = options
    this.config = config
  }

  send(message: Message, delivery: Delivery): void {
    if (this.stopped) throw new Error(`agent ${this.id} is stopped`)
    if (delivery === 'followup') this.nextTurn.push(message)
    else this.nextStep.push(message)
    if (delivery !== 'inject') this.wake()
  }

  followup(text: string | Message): void {
    this.send(typeof text === 'string' ? textMessage('user', text, { kind: 'user' }) : text, 'followup')
  }

  steer(text: string | Message): void {
    this.send(typeof text === 'string' ? textMessage('user', text, { kind: 'user' }) : text, 'steer')
  }

  inject(message: Message): void {
    this.send(message, 'inject')
  }

  cancel(cause: CancelCause = 'user'): void {
    this.nextTurn = []
    this.nextStep = []
    if (!this.controller || this.controller.signal.aborted) return
    this.cause = cause
    this.controller.abort(cause)
  }

  async whenIdle(): Promise<void> {
    while (this.running) await this.running
  }

  async stop(): Promise<void> {
    this.stopped = true
    this.cancel('shutdown')
    await this.whenIdle()
  }

  private wake(): void {
    if (this.running || this.stopped) return
    this.running = this.drive().finally(() => {
      this.running = undefined
      if (!this.stopped && (this.nextTurn.length || this.nextStep.length)) this.wake()
    })
  }

  private setStatus(status: AgentStatus): void {
    if (this.status === status) return
    this.status = status
    void emitIsolated(this.ctx, 'agent/status', this, status)
  }

  private async drive(): Promise<void> {
    this.setStatus('running')
    try {
      while (!this.stopped && (this.nextTurn.length || this.nextStep.length)) await this.runTurn()
    } finally {
      this.setStatus('idle')
    }
  }

  private async runTurn(): Promise<void> {
    const turn = this.session.turnState().turn + 1
    const controller = new AbortController()
    this.controller = controller
    this.cause = undefined
    const { signal } = controller
    // Surfaces see nothing of the turn until its user input is stored (released in the first step, or at the end).
    const release = this.ctx.sessions.holdPublished(this.session)
    this.session.append('turn/start', { turn })
    const claimed = this.nextStep.splice(0)
    const first = this.nextTurn.shift()
    if (first) claimed.push(first)
    let outcome: TurnOutcome
    try {
      outcome = await this.turnBody(turn, claimed, signal, release)
    } catch (error) {
      this.closeOpenWork('INTERNAL_ERROR', `the step failed before this tool call finished: ${errorText(error)}`)
      outcome = signal.aborted
        ? { turn, reason: 'aborted' }
        : { turn, reason: 'error', error: internal(errorText(error)) }
      if (!signal.aborted) void emitIsolated(this.ctx, 'agent/error', this, error)
    }
    const end: { turn: number; reason: TurnOutcome['reason']; error?: LlmFailure; cause?: CancelCause } = {
      turn,
      reason: outcome.reason,
    }
    if (outcome.error) end.error = outcome.error
    if (outcome.reason === 'aborted') end.cause = this.cause ?? 'user'
    this.session.append('turn/end', end)
    this.controller = undefined
    // A turn that never reached its first request: its events are published (and stored) before its end is reported.
    await release()
    void emitIsolated(this.ctx, 'agent/turn-end', this, outcome)
    await this.ctx.sessions.flush(this.session)
  }

  private async turnBody(
    turn: number,
    claimed: Message[],
    signal: AbortSignal,
    release: () => Promise<void>,
  ): Promise<TurnOutcome> {
    let pending = claimed
    let hitMaxTokens = false
    for (let step = 1; ; step++) {
      if (signal.aborted) return { turn, reason: 'aborted' }
      const limit = this.options.maxSteps ?? this.config.maxStepsPerTurn
      if (step > limit) {
        const source = this.options.maxSteps === undefined ? 'maxStepsPerTurn' : "the agent's maxSteps"
        return { turn, reason: 'error', error: internal(`the turn reached ${limit} steps (${source}) and was stopped`) }
      }
      const info: StepInfo = { turn, step, signal }
      const decision = await this.ctx.waterfall('agent/pre-step', this, info, async () => ({ kind: 'enter' }) as const)
      if (decision.kind === 'reject') return { turn, reason: hitMaxTokens ? 'max-tokens' : 'completed' }
      this.session.append('step/start', { turn, step })
      this.openStep = { turn, step }
      const config = await this.ctx.waterfall('agent/request', this, info, async () => ({ ...this.options }))
      await this.reconcileSystem(config)
      for (const given of pending) {
        let message: Message
        try {
          message = await this.ctx.waterfall('agent/user-message', this, given, async () => given)
        } catch (error) {
          if (!(error instanceof MessageBlocked)) throw error
          this.endStep(turn, step)
          return { turn, reason: 'error', error: { code: 'BLOCKED', message: error.message } }
        }
        this.session.append('user/message', { message })
      }
      pending = []
      // The turn's input is stored before anything of the turn is shown (its events and its first delta);
      // the request goes out meanwhile. Later steps are not held.
      const stored = step === 1 ? release() : undefined
      const tools = this.ctx.get('tools')?.schemas(this.id) ?? []
      this.logHeader(config, tools)
      const reply = await this.request(info, config, tools, stored)
      await stored
      if (reply.kind !== 'message') {
        this.endStep(turn, step)
        return reply.kind === 'aborted' ? { turn, reason: 'aborted' } : { turn, reason: 'error', error: reply.failure }
      }
      const calls = reply.blocks.filter((b): b is ToolCall => b.type === 'tool-call')
      if (calls.length) await this.runTools(turn, step, calls, signal)
      this.endStep(turn, step)
      if (signal.aborted) return { turn, reason: 'aborted' }
      if (reply.finish === 'max-tokens') hitMaxTokens = true
      // Steering that arrived during this step joins the next one, after this step's tool results.
      if (calls.length || this.nextStep.length) {
        pending = this.nextStep.splice(0)
        continue
      }
      await this.ctx.serial('agent/turn-stopping', this, { turn, signal })
      if (this.nextStep.length && !signal.aborted) {
        pending = this.nextStep.splice(0)
        continue
      }
      return { turn, reason: hitMaxTokens ? 'max-tokens' : 'completed' }
    }
  }

  private endStep(turn: number, step: number): void {
    this.session.append('step/end', { turn, step })
    this.openStep = undefined
  }

  /**
   * Keeps the system message in step with the rendered prompt: model-visible means logged. A change of an
   * earlier prompt is logged first as `system/prompt-changed`, with why (a new day, an edited AGENTS.md, ...).
   */
  private async reconcileSystem(config: AgentOptions): Promise<void> {
    const prompt = this.ctx.get('systemPrompt')
    const firstThisRun = !this.promptState.rendered
    const { text, changes } = prompt
      ? await prompt.compose(
          { sessionId: this.id, cwd: this.session.meta.cwd, model: config.model, provider: config.provider },
          this.promptState,
        )
      : { text: '', changes: [] }
    const last = this.session.last('system/message')
    const lastText = last?.data.message.content.map((b) => (b.type === 'text' ? b.text : '')).join('') ?? ''
    if (text === lastText) return
    const message: Message = {
      id: newMessageId(),
      role: 'system',
      source: { kind: 'system' },
      content: text ? [{ type: 'text', text }] : [],
    }
    if (last) {
      const why =
        changes.length || !firstThisRun ? changes : [{ section: '*', reason: 'rendered again after a resume' }]
      this.session.append('system/prompt-changed', { changes: why })
      this.session.append('system/message', { message }, { replaces: [last.seq] })
    } else this.session.append('system/message', { message })
  }

  private logHeader(config: AgentOptions, tools: ToolSchema[]): void {
    const header = {
      provider: config.provider,
      model: config.model,
      ...(config.reasoningEffort ? { reasoningEffort: config.reasoningEffort } : {}),
      ...(config.maxTokens ? { maxTokens: config.maxTokens } : {}),
      tools,
    }
    const key = JSON.stringify(header)
    let last = this.session.last('request/header')
    const resumed =
      !this.headerThisRun && last !== undefined && this.session.seedLength > 0 && last.seq < this.session.seedLength
    if (resumed || !last || key !== this.keyOf(last)) {
      last = this.session.append('request/header', {
        reason: resumed ? 'resume' : last ? 'change' : 'initial',
        ...header,
      })
    }
    this.headerKey = { seq: last.seq, key }
    this.headerThisRun = true
    const contextWindow = this.ctx.get('llm')?.modelInfo(config.provider, config.model)?.contextWindow
    const context = { provider: config.provider, model: config.model, ...(contextWindow ? { contextWindow } : {}) }
    const lastContext = this.session.last('request/context')
    if (!lastContext || JSON.stringify(lastContext.data) !== JSON.stringify(context))
      this.session.append('request/context', context)
  }

  private keyOf(header: SessionEvent<'request/header'>): string {
    if (this.headerKey?.seq === header.seq) return this.headerKey.key
    return JSON.stringify({ ...header.data, reason: undefined })
  }

  /** One model call, retried as the hooks decide. `stored`: no delta is shown before it settles. */
  private async request(
    info: StepInfo,
    config: AgentOptions,
    tools: ToolSchema[],
    stored?: Promise<void>,
  ): Promise<Reply> {
    const llm = this.ctx.get('llm')
    const { turn, step, signal } = info
    for (let attempt = 1; ; attempt++) {
      if (!llm) return { kind: 'failed', failure: internal('no model runtime is loaded (is the llm plugin enabled?)') }
      const assembler = new BlockAssembler()
      const stream = llm.stream({
        provider: config.provider,
        model: config.model,
        ...(config.reasoningEffort ? { reasoningEffort: config.reasoningEffort } : {}),
        ...(config.maxTokens ? { maxTokens: config.maxTokens } : {}),
        messages: this.session.deriveMessages(),
        tools,
        signal,
        sessionId: this.id,
        purpose: 'agent',
      })
      for await (const chunk of stream) {
        assembler.push(chunk)
        if (stored) {
          await stored
          stored = undefined
        }
        if (chunk.type === 'text-delta' || chunk.type === 'reasoning-delta' || chunk.type === 'tool-call-delta') {
          const kind =
            chunk.type === 'text-delta' ? 'text' : chunk.type === 'reasoning-delta' ? 'reasoning' : 'tool-arguments'
          const delta = chunk.type === 'tool-call-delta' ? chunk.argumentsDelta : chunk.text
          void emitIsolated(this.ctx, 'agent/delta', this, { turn, step, kind, index: chunk.index, delta })
        }
      }
      const finish = assembler.finish ?? {
        reason: 'error' as const,
        failure: { code: 'PROTOCOL' as const, message: 'the model stream ended without a finish' },
      }
      const usage = assembler.usage
      if (finish.reason === 'aborted' || signal.aborted) {
        const visible = assembler.visibleBlocks()
        if (visible.length) {
          this.session.append('assistant/message', {
            turn,
            step,
            message: this.assistantMessage(visible, config),
            finish: 'aborted',
            interrupted: true,
            ...(usage ? { usage } : {}),
          })
        } else {
          this.session.append('assistant/attempt', {
            turn,
            step,
            attempt,
            error: finish.failure ?? { code: 'ABORTED', message: 'cancelled' },
          })
        }
        return { kind: 'aborted' }
      }
      if (finish.reason === 'error') {
        const failure = finish.failure ?? internal('the model call failed without details')
        this.session.append('assistant/attempt', { turn, step, attempt, error: failure, ...(usage ? { usage } : {}) })
        const decision = await this.ctx.waterfall(
          'agent/request-error',
          this,
          { ...info, attempt, provider: config.provider, failure, outputSeen: assembler.hasOutput },
          async () => undefined,
        )
        if (signal.aborted) return { kind: 'aborted' }
        if (decision?.kind === 'retry') {
          this.session.append('llm/retry', { turn, step, attempt, delayMs: decision.delayMs, error: failure })
          await sleep(decision.delayMs, signal)
          if (signal.aborted) return { kind: 'aborted' }
          continue
        }
        return { kind: 'failed', failure }
      }
      let blocks = assembler
        .blocks()
        .map((b) => (b.type === 'tool-call' && !b.id ? { ...b, id: `call_${randomUUID()}` as ToolCallId } : b))
      // A reply cut by the token limit may hold half-written tool calls: never run them.
      if (finish.reason === 'max-tokens') blocks = blocks.filter((b) => b.type !== 'tool-call')
      this.session.append('assistant/message', {
        turn,
        step,
        message: this.assistantMessage(blocks, config),
        finish: finish.reason,
        ...(usage ? { usage } : {}),
      })
      return { kind: 'message', blocks, finish: finish.reason }
    }
  }

  private assistantMessage(content: ContentBlock[], config: AgentOptions): Message {
    return {
      id: newMessageId(),
      role: 'assistant',
      content,
      source: { kind: 'model', provider: config.provider, model: config.model },
    }
  }

  /**
   * Runs a step's tool calls. Calls the tools runtime marks concurrency-safe
   * run together (up to maxParallelToolCalls); any other call runs alone.
   * `tool/call` and `tool/result` events are logged in the model's order.
   * If logging fails, no further call starts and the failure is rethrown once
   * the calls already running have finished.
   */
  private async runTools(turn: number, step: number, calls: ToolCall[], signal: AbortSignal): Promise<void> {
    const tools = this.ctx.get('tools')
    const results: (ToolResult | undefined)[] = calls.map(() => undefined)
    const failures: unknown[] = []
    let committed = 0
    const commit = () => {
      while (committed < calls.length && results[committed]) {
        this.logResult(turn, step, calls[committed] as ToolCall, results[committed] as ToolResult)
        committed++
      }
    }
    const running = new Set<Promise<void>>()
    for (const [i, call] of calls.entries()) {
      const safe = !!tools && tools.isConcurrencySafe(call.name, call.arguments)
      if (!safe) await Promise.all(running)
      while (running.size >= this.config.maxParallelToolCalls) await Promise.race(running)
      if (failures.length) break
      if (signal.aborted) {
        results[i] = failed('ABORTED_BEFORE_DISPATCH', 'Error: the turn was cancelled before this tool call ran.')
        commit()
        continue
      }
      this.session.append('tool/call', { turn, step, callId: call.id, name: call.name, arguments: call.arguments })
      const run = this.executeTool(call, signal)
        .then((result) => {
          results[i] = result
          if (!failures.length) commit()
        })
        .catch((error: unknown) => void failures.push(error))
      if (safe) {
        running.add(run)
        void run.finally(() => running.delete(run))
      } else await run
    }
    await Promise.all(running)
    if (failures.length) throw failures[0]
    commit()
  }

  private async executeTool(call: ToolCall, signal: AbortSignal): Promise<ToolResult> {
    const tools = this.ctx.get('tools')
    if (!tools) return failed('UNKNOWN_TOOL', `Error: no tools are loaded, so "${call.name}" cannot run.`)
    return tools.execute(
      { callId: call.id, name: call.name, arguments: call.arguments },
      { signal, cwd: this.session.meta.cwd, sessionId: this.id, sessionState: this.toolState },
    )
  }

  private logResult(turn: number, step: number, call: ToolCall, result: ToolResult): void {
    const message: Message = {
      id: newMessageId(),
      role: 'user',
      source: { kind: 'tool', name: call.name },
      content: [
        {
          type: 'tool-result',
          toolCallId: call.id,
          content: result.content,
          ...(result.isError ? { isError: true } : {}),
        },
      ],
    }
    this.session.append('tool/result', {
      turn,
      step,
      callId: call.id,
      name: call.name,
      message,
      ...(result.error ? { error: result.error } : {}),
      ...(result.meta !== undefined ? { meta: result.meta } : {}),
    })
  }

  /** After a failure mid-step: a result for every call still owed, then the step's end. */
  private closeOpenWork(code: string, text: string): void {
    const step = this.openStep
    if (!step) return
    const last = this.session.last('assistant/message') as SessionEvent<'assistant/message'> | undefined
    if (last && last.data.turn === step.turn && last.data.step === step.step) {
      const answered = new Set(
        this.session.events
          .filter((e) => e.type === 'tool/result')
          .map((e) => (e as SessionEvent<'tool/result'>).data.callId as string),
      )
      for (const block of last.data.message.content) {
        if (block.type === 'tool-call' && !answered.has(block.id))
          this.logResult(step.turn, step.step, block, failed(code, `Error: ${text}`))
      }
    }
    this.endStep(step.turn, step.step)
  }
}

function failed(code: string, text: string): ToolResult {
  return { content: [{ type: 'text', text }], isError: true, error: { code, message: text } }
}
