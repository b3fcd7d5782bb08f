import {
  type ContentBlock,
  type Delta,
  type EarlierHistory,
  type ImageAttachment,
  isEvent,
  type Message,
  type SessionEvent,
  type TokenUsage,
  type UsageReport,
} from '@dsh/web-client'
import { addUsage, NO_USAGE } from '../lib/usage.ts'
import type { ConversationNode, ConversationState, ToolNode } from './nodes.ts'

/** The key of the row that stands for the part of the log a recent-history start left out. */
const EARLIER_KEY = 'earlier'

interface TurnBook {
  start?: number
  usage: TokenUsage
  model?: string
}

/**
 * Projects a session log (durable events) plus live deltas into the rows
 * the conversation shows. Blocks of a reply share a key between their
 * streaming draft and their final form (`m:<turn>:<step>:<index>`), so a
 * row never remounts when its reply lands.
 */
export class ConversationModel {
  private nodes: ConversationNode[] = []
  private positions = new Map<string, number>()
  private callKeys = new Map<string, string>()
  private turns = new Map<number, TurnBook>()
  /** The turn the latest `turn/start` opened: the one a user message belongs to. */
  private lastTurn: number | undefined
  /** Cost of each turn, by turn number, from the server's latest usage report. */
  private costs = new Map<number, number>()
  /** Keys of rows still streaming or running, so closing a turn does not scan every row. */
  private open = new Set<string>()
  private shared = false
  private cached: ConversationState | undefined
  private state: Omit<ConversationState, 'nodes'> = {
    todos: [],
    planMode: false,
    running: false,
    lastSeq: -1,
    totalUsage: NO_USAGE,
  }

  snapshot(): ConversationState {
    if (!this.cached) {
      this.shared = true
      this.cached = { ...this.state, nodes: this.nodes }
    }
    return this.cached
  }

  /** Plan mode as the server reads it back after a change (its `plan/mode` event may come later). */
  setPlanMode(planMode: boolean): void {
    if (this.state.planMode !== planMode) this.update({ planMode })
  }

  setRunning(running: boolean): void {
    if (this.state.running === running) return
    this.update({ running })
    if (!running) this.finishDrafts()
  }

  /** The socket came back: drafts streaming now may miss deltas sent while it was down. */
  markResumed(): void {
    for (const node of this.openNodes()) {
      if ((node.kind === 'text' || node.kind === 'reasoning') && node.streaming) this.put({ ...node, partial: true })
    }
  }

  applyDelta(delta: Delta): void {
    const key = blockKey(delta.turn, delta.step, delta.index)
    const existing = this.get(key)
    if (!this.state.running) this.update({ running: true })
    if (delta.kind === 'tool-arguments') {
      const tool = existing?.kind === 'tool' ? existing : undefined
      this.put({
        ...(tool ?? { kind: 'tool', key, name: '', status: 'streaming' }),
        args: (tool?.args ?? '') + delta.delta,
      } as ToolNode)
      return
    }
    const kind = delta.kind === 'text' ? 'text' : 'reasoning'
    if (existing && existing.kind === kind) {
      this.put({ ...existing, text: existing.text + delta.delta, streaming: true })
    } else {
      // A first delta at an index past 0 with nothing before it means the start of the reply was missed.
      const partial = !existing && delta.index > 0 && !this.get(blockKey(delta.turn, delta.step, 0)) ? true : undefined
      this.put({ kind, key, text: delta.delta, streaming: true, ...(partial ? { partial } : {}) })
    }
  }

  applyEvent(event: SessionEvent): void {
    if (event.seq <= this.state.lastSeq) return
    this.update({ lastSeq: event.seq })
    if (isEvent(event, 'user/message')) this.userMessage(event.seq, event.time, event.data.message)
    else if (isEvent(event, 'assistant/message')) this.assistantMessage(event)
    else if (isEvent(event, 'tool/call')) this.toolCall(event)
    else if (isEvent(event, 'tool/result')) this.toolResult(event)
    else if (isEvent(event, 'turn/start')) {
      this.turns.set(event.data.turn, { start: event.time, usage: NO_USAGE })
      this.lastTurn = event.data.turn
      this.update({ running: true })
    } else if (isEvent(event, 'turn/end')) this.turnEnd(event)
    else if (isEvent(event, 'assistant/attempt')) {
      this.dropDrafts(event.data.turn, event.data.step)
      this.addTurnUsage(event.data.turn, event.data.usage, this.state.model)
    } else if (isEvent(event, 'llm/retry')) {
      const { turn, step, attempt, delayMs, error } = event.data
      this.put({
        kind: 'notice',
        key: `retry:${turn}:${step}`,
        tone: 'warn',
        code: error.code,
        text: `${error.message} Retrying in ${Math.round(delayMs / 100) / 10} s (attempt ${attempt + 1}).`,
      })
    } else if (this.applyState(event)) {
      if (isEvent(event, 'plan/mode')) {
        this.put({
          kind: 'notice',
          key: `e:${event.seq}`,
          tone: 'info',
          text: event.data.active ? 'Plan mode on' : 'Plan mode off',
        })
      }
    } else if (isEvent(event, 'permission/decision')) {
      const key = this.callKeys.get(event.data.callId)
      const node = key ? this.get(key) : undefined
      const { decision, answer, reason } = event.data
      if (node?.kind === 'tool') this.put({ ...node, decision: { decision, reason, ...(answer ? { answer } : {}) } })
    } else if (isEvent(event, 'context/compaction')) {
      const { replaced, error, reason } = event.data
      this.put(
        error
          ? { kind: 'notice', key: `e:${event.seq}`, tone: 'error', text: `Compaction failed: ${error}` }
          : {
              kind: 'notice',
              key: `e:${event.seq}`,
              tone: 'info',
              text: `Context compacted (${reason}): ${replaced.length} earlier messages summarised`,
            },
      )
    }
  }

  /**
   * Starts from the recent part of a log: the state and usage of the part
   * left out, and a row at the top saying it is on its way.
   */
  startFromRecent(earlier: EarlierHistory): void {
    for (const event of earlier.state) this.applyState(event)
    for (const { usage } of earlier.usage) this.addTotal(usage)
    this.put({ kind: 'notice', key: EARLIER_KEY, tone: 'info', text: 'Loading earlier messages…' })
  }

  /** The part a recent-history start left out could not be read. */
  earlierFailed(message: string): void {
    this.put({
      kind: 'notice',
      key: EARLIER_KEY,
      tone: 'error',
      text: `Earlier messages could not be loaded: ${message}`,
    })
  }

  /** Session-wide state from the events that set it; false for other events. */
  private applyState(event: SessionEvent): boolean {
    if (isEvent(event, 'request/header')) {
      const { provider, model, reasoningEffort } = event.data
      this.update({ provider, model, ...(reasoningEffort ? { reasoningEffort } : {}) })
    } else if (isEvent(event, 'todo/write')) this.update({ todos: event.data.todos })
    else if (isEvent(event, 'session/title')) this.update({ title: event.data.title })
    else if (isEvent(event, 'plan/mode')) this.update({ planMode: event.data.active })
    else return false
    return true
  }

  private userMessage(seq: number, time: number, message: Message): void {
    const key = `e:${seq}`
    const text = textOf(message.content)
    if (message.source.kind === 'plugin') {
      const { plugin, form } = message.source
      this.put({ kind: 'context', key, plugin, text, ...(form ? { form } : {}) })
    } else if (message.source.kind === 'user') {
      // A command shows as typed (`/review 42`); the model got its expanded prompt.
      const { command } = message.source
      const typed = command ? `/${command.name}${command.args ? ` ${command.args}` : ''}` : text
      const turn = this.lastTurn
      const images = imagesOf(message.content)
      this.put({
        kind: 'user',
        key,
        messageId: message.id,
        ...(turn === undefined ? {} : { turn }),
        text: typed,
        images,
        time,
      })
    }
  }

  private assistantMessage(event: SessionEvent<'assistant/message'>): void {
    const { turn, step, message, usage } = event.data
    const model = message.source.kind === 'model' ? message.source.model : this.state.model
    this.addTurnUsage(turn, usage, model)
    const finalKeys = new Set<string>()
    message.content.forEach((block, index) => {
      const key = blockKey(turn, step, index)
      if (block.type === 'text' && block.text.trim()) {
        finalKeys.add(key)
        this.put({ kind: 'text', key, turn, text: block.text, streaming: false })
      } else if (block.type === 'reasoning' && block.text.trim()) {
        finalKeys.add(key)
        this.put({ kind: 'reasoning', key, text: block.text, streaming: false })
      } else if (block.type === 'tool-call') {
        finalKeys.add(key)
        const existing = this.get(key)
        const status = existing?.kind === 'tool' && existing.status !== 'streaming' ? existing.status : 'pending'
        this.callKeys.set(block.id, key)
        this.put({
          ...(existing?.kind === 'tool' ? existing : {}),
          kind: 'tool',
          key,
          callId: block.id,
          name: block.name,
          args: block.arguments,
          status,
        })
      }
    })
    this.dropDrafts(turn, step, finalKeys)
    if (event.data.interrupted)
      this.put({ kind: 'notice', key: `e:${event.seq}`, tone: 'info', text: 'Reply interrupted' })
  }

  private toolCall(event: SessionEvent<'tool/call'>): void {
    const { callId, name, arguments: args, presentation } = event.data
    const key = this.callKeys.get(callId) ?? `call:${callId}`
    this.callKeys.set(callId, key)
    const existing = this.get(key)
    const base = existing?.kind === 'tool' ? existing : ({ kind: 'tool', key } as const)
    const status = existing?.kind === 'tool' && isFinished(existing) ? existing.status : 'running'
    this.put({ ...base, callId, name, args, status, ...(presentation ? { presentation } : {}) })
  }

  private toolResult(event: SessionEvent<'tool/result'>): void {
    const { callId, name, message, error, meta } = event.data
    const key = this.callKeys.get(callId) ?? `call:${callId}`
    this.callKeys.set(callId, key)
    const existing = this.get(key)
    const block = message.content.find((b) => b.type === 'tool-result')
    const content = block?.type === 'tool-result' ? block.content : message.content
    const cancelled = error !== undefined && /cancel|abort/i.test(error.code)
    this.put({
      ...(existing?.kind === 'tool' ? existing : { kind: 'tool', key, callId, args: '' }),
      name,
      status: cancelled ? 'cancelled' : error || (block?.type === 'tool-result' && block.isError) ? 'error' : 'done',
      result: textOf(content),
      resultImages: imagesOf(content),
      ...(error ? { error } : {}),
      ...(meta !== undefined ? { meta } : {}),
    })
  }

  private turnEnd(event: SessionEvent<'turn/end'>): void {
    const { turn, reason, error } = event.data
    const book = this.turns.get(turn)
    this.finishDrafts()
    for (const node of this.openNodes()) {
      if (node.kind === 'tool' && !isFinished(node)) this.put({ ...node, status: 'cancelled' })
    }
    this.put({
      kind: 'turn-end',
      key: `turn:${turn}:${event.seq}`,
      turn,
      reason,
      usage: book?.usage ?? NO_USAGE,
      ...(this.costs.has(turn) ? { cost: this.costs.get(turn) } : {}),
      ...(book?.model ? { model: book.model } : {}),
      ...(book?.start !== undefined ? { durationMs: event.time - book.start } : {}),
      ...(error
        ? { error: { code: error.code, message: error.message, ...(error.status ? { status: error.status } : {}) } }
        : {}),
    })
    this.update({ running: false })
  }

  private addTurnUsage(turn: number, usage: TokenUsage | undefined, model: string | undefined): void {
    if (!usage) return
    const book = this.turns.get(turn) ?? { usage: NO_USAGE }
    this.turns.set(turn, { ...book, usage: addUsage(book.usage, usage), ...(model ? { model } : {}) })
    this.addTotal(usage)
  }

  private addTotal(usage: TokenUsage): void {
    this.update({ totalUsage: addUsage(this.state.totalUsage, usage) })
  }

  /** The server's metered usage of the whole session: each turn's cost, the session's cost and context use. */
  applyUsage(report: UsageReport): void {
    this.costs = new Map(report.turns.flatMap((t) => (t.costUsd === undefined ? [] : [[t.turn, t.costUsd] as const])))
    for (const node of this.nodes) {
      if (node.kind !== 'turn-end') continue
      const cost = this.costs.get(node.turn)
      if (cost !== undefined && cost !== node.cost) this.put({ ...node, cost })
    }
    const { totalCost: _cost, context: _context, ...rest } = this.state
    this.state = {
      ...rest,
      ...(report.costUsd !== undefined ? { totalCost: report.costUsd } : {}),
      ...(report.context ? { context: report.context } : {}),
    }
    this.cached = undefined
  }

  /** Removes the streaming drafts of a step that did not become part of its final message. */
  private dropDrafts(turn: number, step: number, keep: ReadonlySet<string> = new Set()): void {
    if (this.open.size === 0) return
    const prefix = `m:${turn}:${step}:`
    const gone = new Set<string>()
    for (const key of this.open) {
      const node = this.get(key)
      if (node && key.startsWith(prefix) && !keep.has(key) && isDraft(node)) gone.add(key)
    }
    if (gone.size === 0) return
    for (const key of gone) this.open.delete(key)
    this.own()
    this.nodes = this.nodes.filter((n) => !gone.has(n.key))
    this.positions = new Map(this.nodes.map((n, i) => [n.key, i]))
    this.cached = undefined
  }

  private finishDrafts(): void {
    for (const node of this.openNodes()) {
      if ((node.kind === 'text' || node.kind === 'reasoning') && node.streaming) this.put({ ...node, streaming: false })
    }
  }

  private openNodes(): ConversationNode[] {
    return [...this.open].flatMap((key) => this.get(key) ?? [])
  }

  private get(key: string): ConversationNode | undefined {
    const position = this.positions.get(key)
    return position === undefined ? undefined : this.nodes[position]
  }

  private put(node: ConversationNode): void {
    this.own()
    if (isOpen(node)) this.open.add(node.key)
    else this.open.delete(node.key)
    const position = this.positions.get(node.key)
    if (position === undefined) {
      this.positions.set(node.key, this.nodes.length)
      this.nodes.push(node)
    } else {
      this.nodes[position] = node
    }
    this.cached = undefined
  }

  /** Copies the node list before the first change after a snapshot handed it out. */
  private own(): void {
    if (!this.shared) return
    this.nodes = this.nodes.slice()
    this.shared = false
  }

  private update(patch: Partial<Omit<ConversationState, 'nodes'>>): void {
    // In place: a snapshot copies the state, so none handed out shares this object.
    Object.assign(this.state, patch)
    this.cached = undefined
  }
}

function blockKey(turn: number, step: number, index: number): string {
  return `m:${turn}:${step}:${index}`
}

function isDraft(node: ConversationNode): boolean {
  return (
    ((node.kind === 'text' || node.kind === 'reasoning') && node.streaming) ||
    (node.kind === 'tool' && node.status === 'streaming')
  )
}

function isOpen(node: ConversationNode): boolean {
  return (
    ((node.kind === 'text' || node.kind === 'reasoning') && node.streaming) ||
    (node.kind === 'tool' && !isFinished(node))
  )
}

function isFinished(node: ToolNode): boolean {
  return node.status === 'done' || node.status === 'error' || node.status === 'cancelled'
}

export function textOf(content: readonly ContentBlock[]): string {
  let text: string | undefined
  for (const block of content)
    if (block.type === 'text') text = text === undefined ? block.text : `${text}\n${block.text}`
  return text ?? ''
}

function imagesOf(content: readonly ContentBlock[]): ImageAttachment[] {
  const images: ImageAttachment[] = []
  for (const block of content) if (block.type === 'image') images.push({ mediaType: block.mediaType, data: block.data })
  return images
}
