import type { Agent } from '@dsh/agent'
import { type Context, Service } from '@dsh/cordis'
import { completeText, type Message } from '@dsh/llm'
import { messageOf, newMessageId, type Session, type SessionEvent, textMessage } from '@dsh/session'
import type { CompactionConfig } from './config.ts'
import { contextTokens, estimateTokens } from './measure.ts'
import { pairsIntact, prunable, resultChars, type Retention, SUMMARY_PLUGIN, summarisable, unitsOf } from './plan.ts'
import { summaryText, transcript } from './summary.ts'

import type { CompactionEventData, CompactionReason } from '@dsh/wire-types'

/** The `context/compaction` event (logged once per attempt, after the history changed, or not with `error`) is a wire type. */
export type { CompactionEventData, CompactionReason } from '@dsh/wire-types'

export interface CompactResult {
  compacted: boolean
  /** How many history entries were replaced. */
  replaced: number
  error?: string
}

export const COMPACTION_EVENT = 'context/compaction'

declare module '@dsh/cordis' {
  interface Context {
    compaction: Compaction
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

/** Walks the log back to the latest event of `stop` type, calling `visit` on the events after it. */
function since(session: Session, stop: string, visit: (event: SessionEvent) => void): void {
  const events = session.events
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i] as SessionEvent
    if (event.type === stop) return
    visit(event)
  }
}

function compactionsSince(session: Session, stop: string, accept: (data: CompactionEventData) => boolean): number {
  let count = 0
  since(session, stop, (event) => {
    if (event.type === COMPACTION_EVENT && accept((event as SessionEvent<'context/compaction'>).data)) count++
  })
  return count
}

/**
 * `ctx.compaction`: shrinks a session's model history while the log keeps
 * everything. Old large tool results are pruned to stubs first; then older
 * turns and steps are summarised by a model call into one message that
 * replaces them (`replaces`). With `auto`, it runs before a step when the
 * context passes `thresholdRatio` of the window, and after a context-overflow
 * failure (then the step is retried).
 */
export class Compaction extends Service {
  static inject = ['sessions', 'llm']
  private readonly home: Context
  private readonly config: CompactionConfig
  private readonly busy = new Set<string>()
  private readonly stopped = new AbortController()

  constructor(ctx: Context, config: CompactionConfig) {
    super(ctx, 'compaction')
    this.home = ctx
    this.config = config
    ctx.sessions.registerEventType(ctx, COMPACTION_EVENT)
    ctx.effect(() => () => this.stopped.abort(), 'compaction: stop summary calls')
    if (!config.auto) return
    ctx.on('agent/pre-step', async (agent, info, next) => {
      const decision = await next()
      if (decision.kind === 'enter') await this.onPressure(agent, info.signal)
      return decision
    })
    ctx.on('agent/request-error', async (agent, info, next) => {
      if (info.failure.code !== 'CONTEXT_WINDOW_EXCEEDED' || info.outputSeen) return next()
      const tried = compactionsSince(agent.session, 'step/start', (data) => data.reason === 'overflow')
      if (tried >= this.config.maxOverflowRetries) return next()
      const result = await this.run(agent, 'overflow', info.signal)
      return result.compacted && !info.signal.aborted ? { kind: 'retry', delayMs: 0 } : next()
    })
  }

  /** Compacts an idle agent's history now (the `/compact` command). */
  async compact(agent: Agent, _options: { reason?: 'manual' } = {}): Promise<CompactResult> {
    if (agent.status === 'running')
      return { compacted: false, replaced: 0, error: `agent ${agent.id} is running a turn; compact it when it is idle` }
    const result = await this.run(agent, 'manual', this.stopped.signal)
    await this.home.sessions.flush(agent.session)
    return result
  }

  /** The model's context window: from its route, else the log, else config. */
  contextWindow(agent: Agent): number | undefined {
    const { provider, model } = agent.options
    return (
      this.home.llm.modelInfo(provider, model)?.contextWindow ??
      agent.session.last('request/context')?.data.contextWindow ??
      this.config.contextWindow
    )
  }

  /** The estimated size of the agent's next request, in tokens. */
  contextTokens(agent: Agent): number {
    return contextTokens(agent.session, this.config)
  }

  private limit(agent: Agent): number | undefined {
    const window = this.contextWindow(agent)
    return window ? Math.floor(window * this.config.thresholdRatio) : undefined
  }

  private async onPressure(agent: Agent, signal: AbortSignal): Promise<void> {
    try {
      const limit = this.limit(agent)
      if (limit === undefined || this.contextTokens(agent) < limit) return
      // One failed attempt per turn: a broken summary call should not cost a model call at every step.
      if (
        compactionsSince(
          agent.session,
          'turn/start',
          (data) => data.reason === 'threshold' && data.error !== undefined,
        ) > 0
      )
        return
      await this.run(agent, 'threshold', signal)
    } catch (error) {
      this.home.logger('compaction').warn('session %s: compaction failed: %s', agent.id, errorText(error))
    }
  }

  private async run(agent: Agent, reason: CompactionReason, signal: AbortSignal): Promise<CompactResult> {
    const { id } = agent.session
    if (this.busy.has(id)) return { compacted: false, replaced: 0, error: `session ${id} is already being compacted` }
    this.busy.add(id)
    try {
      return await this.compactSession(agent, reason, signal)
    } finally {
      this.busy.delete(id)
    }
  }

  private async compactSession(agent: Agent, reason: CompactionReason, signal: AbortSignal): Promise<CompactResult> {
    const { session } = agent
    const tokensBefore = this.contextTokens(agent)
    const retention: Retention = reason === 'overflow' ? { keepTurns: 1, keepSteps: 1 } : this.config
    const record = (replaced: number[], error?: string) =>
      session.append(COMPACTION_EVENT, { reason, replaced, tokensBefore, ...(error !== undefined ? { error } : {}) })

    const pruned = this.prune(session, retention.keepSteps)
    const limit = this.limit(agent)
    if (reason === 'threshold' && pruned.length && limit !== undefined && this.contextTokens(agent) < limit) {
      record(pruned)
      return { compacted: true, replaced: pruned.length }
    }
    const units = summarisable(unitsOf(session), retention).filter((unit) => pairsIntact(unit.events))
    const events = units.flatMap((unit) => unit.events)
    if (events.length === 0) {
      if (pruned.length === 0) return { compacted: false, replaced: 0 }
      record(pruned)
      return { compacted: true, replaced: pruned.length }
    }
    let summary: string
    try {
      summary = await this.summarise(agent, events, signal)
    } catch (error) {
      const message =
        signal.aborted || this.stopped.signal.aborted ? 'cancelled' : `the summary call failed: ${errorText(error)}`
      record(pruned, message)
      if (message !== 'cancelled')
        this.home
          .logger('compaction')
          .warn('session %s: %s compaction: %s; the history stays as it was', session.id, reason, message)
      return { compacted: pruned.length > 0, replaced: pruned.length, error: message }
    }
    const seqs = events.map((event) => event.seq)
    const message: Message = {
      id: newMessageId(),
      role: 'user',
      source: { kind: 'plugin', plugin: SUMMARY_PLUGIN, form: 'summary' },
      content: [{ type: 'text', text: summaryText(summary) }],
    }
    session.append('user/message', { message }, { replaces: seqs })
    record([...pruned, ...seqs])
    return { compacted: true, replaced: pruned.length + seqs.length }
  }

  /** Replaces old large tool results by stubs; returns the seqs replaced. */
  private prune(session: Session, keepSteps: number): number[] {
    const victims = prunable(unitsOf(session), keepSteps, this.config.pruneMinChars).filter((event) => !event.replaces)
    for (const event of victims) {
      const { data } = event
      const block = data.message.content.find((b) => b.type === 'tool-result')
      const text = `[The output of ${data.name} (${resultChars(event)} characters) was removed from the context to save space; run the tool again if you need it.]`
      const message: Message = {
        id: newMessageId(),
        role: 'user',
        source: data.message.source,
        content: [
          {
            type: 'tool-result',
            toolCallId: data.callId,
            content: [{ type: 'text', text }],
            ...(block?.type === 'tool-result' && block.isError ? { isError: true } : {}),
          },
        ],
      }
      const { meta: _meta, ...rest } = data
      session.append('tool/result', { ...rest, message }, { replaces: [event.seq] })
    }
    return victims.map((event) => event.seq)
  }

  private async summarise(agent: Agent, events: readonly SessionEvent[], signal: AbortSignal): Promise<string> {
    const messages = events.map((event) => messageOf(event)).filter((m): m is Message => m !== undefined)
    const conversation = transcript(messages, this.config.transcriptBlockChars)
    const reply = await completeText(this.home.llm, {
      provider: this.config.provider ?? agent.options.provider,
      model: this.config.model ?? agent.options.model,
      reasoningEffort: 'off',
      maxTokens: this.config.maxTokens,
      purpose: 'compaction',
      sessionId: agent.id,
      signal: AbortSignal.any([signal, this.stopped.signal]),
      messages: [
        textMessage('system', this.config.prompt, { kind: 'system' }),
        textMessage('user', `The conversation to summarise:\n\n<conversation>\n${conversation}\n</conversation>`, {
          kind: 'plugin',
          plugin: SUMMARY_PLUGIN,
        }),
      ],
    })
    const summary = reply.text.trim()
    if (!summary) throw new Error('the model returned an empty summary')
    const before = estimateTokens(messages, this.config)
    const after = estimateTokens(
      [{ ...(messages[0] as Message), content: [{ type: 'text', text: summaryText(summary) }] }],
      this.config,
    )
    if (after >= before)
      throw new Error(
        `the summary (about ${after} tokens) is not shorter than what it would replace (about ${before} tokens)`,
      )
    return summary
  }
}
