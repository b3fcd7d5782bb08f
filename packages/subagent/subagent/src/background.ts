import type { Agent } from '@dsh/agent'
import type { Context } from '@dsh/cordis'
import type { Message } from '@dsh/llm'
import { textMessage, type TurnEndReason } from '@dsh/session'
import { ToolError, type ToolOutput, type ToolRunContext, textOf } from '@dsh/tools'
import type { SubagentConfig } from './config.ts'
import { outcome, type StartedChild, type TaskArgs } from './task.ts'

/** One background child, kept until its parent closes so that it can be messaged again. */
export interface BackgroundChild {
  agent: Agent
  /** The session that started it. */
  parent: string
  description: string
  type: string
  /** How its last turn ended; absent while its first turn runs. */
  lastEnd?: TurnEndReason
  release(): void
  timer?: NodeJS.Timeout
}

const notice = (text: string): Message =>
  textMessage('user', text, { kind: 'plugin', plugin: 'subagent', form: 'notice' })

/**
 * The background children of every session: started by `subagent` with
 * `run_in_background`, each in its own session. When a child's turn ends,
 * its result is injected into the parent (`agent.inject`), which reads it
 * at its next step; an idle parent reads it with its next turn. A child is
 * disposed with its parent, or when this plugin stops.
 */
export class BackgroundChildren {
  private readonly entries = new Map<string, BackgroundChild>()
  /** Starts under way, per parent, so that concurrent calls in one reply count against the limit. */
  private readonly starting = new Map<string, number>()

  constructor(
    private readonly ctx: Context,
    private readonly config: SubagentConfig,
  ) {
    // On the append itself, so the parent holds the notice before any surface is told the child's turn ended.
    ctx.on('session/event', (session, event) => {
      if (event.type === 'turn/end') this.turnEnded(session.id)
    })
    ctx.on('agent/disposed', (agent) => this.disposed(agent))
    ctx.effect(() => () => void this.disposeAll(), 'background subagents')
  }

  get(id: string): BackgroundChild | undefined {
    return this.entries.get(id)
  }

  /** The background children `sessionId` started; with `descendants`, theirs too, depth first. */
  list(sessionId: string, descendants: boolean): Array<BackgroundChild & { depth: number }> {
    const out: Array<BackgroundChild & { depth: number }> = []
    const walk = (parent: string, depth: number) => {
      for (const entry of this.entries.values()) {
        if (entry.parent !== parent) continue
        out.push({ ...entry, depth })
        if (descendants) walk(entry.agent.id, depth + 1)
      }
    }
    walk(sessionId, 1)
    return out
  }

  /** Whether `id` is a background child of `ancestor`, at any depth. */
  isBelow(id: string, ancestor: string): boolean {
    for (let entry = this.entries.get(id), hops = 0; entry && hops < 1000; hops++) {
      if (entry.parent === ancestor) return true
      entry = this.entries.get(entry.parent)
    }
    return false
  }

  /** Whether the child is in a turn: false from the moment its turn ends (before the agent reports idle). */
  working(entry: BackgroundChild): boolean {
    return entry.agent.status === 'running' && entry.agent.session.turnState().open
  }

  /** Refuses, naming the limit, when `parent` already has as many children working as it may. */
  checkCapacity(parent: string): void {
    const working = [...this.entries.values()].filter((e) => e.parent === parent && this.working(e))
    const count = working.length + (this.starting.get(parent) ?? 0)
    if (count >= this.config.maxConcurrentBackground)
      throw new ToolError(
        'SUBAGENT_LIMIT',
        `${count} background subagent(s) of this session are already working, the most allowed at once ` +
          `(maxConcurrentBackground: ${this.config.maxConcurrentBackground}); wait for one to finish or interrupt one`,
      )
  }

  /** The `subagent` call with `run_in_background`: starts the child and returns its id at once. */
  async start(args: TaskArgs, run: ToolRunContext, create: () => Promise<StartedChild>): Promise<ToolOutput> {
    this.checkCapacity(run.sessionId)
    this.starting.set(run.sessionId, (this.starting.get(run.sessionId) ?? 0) + 1)
    let started: StartedChild
    try {
      started = await create()
    } finally {
      const left = (this.starting.get(run.sessionId) ?? 1) - 1
      if (left > 0) this.starting.set(run.sessionId, left)
      else this.starting.delete(run.sessionId)
    }
    const entry: BackgroundChild = {
      agent: started.agent,
      parent: run.sessionId,
      description: args.description,
      type: started.type,
      release: started.release,
    }
    this.entries.set(entry.agent.id, entry)
    this.deliver(entry, textMessage('user', args.prompt, { kind: 'user' }), 'followup')
    return {
      content:
        `Started background subagent ${entry.agent.id} ("${args.description}"). It works on its own; its result ` +
        'reaches you as a message when it finishes, so do not poll. Use its id with send_message or interrupt_agent.',
      meta: { sessionId: entry.agent.id, background: true },
    }
  }

  /** Hands a message to a child: a new turn when it is idle (with the turn's time limit), else the next step. */
  deliver(entry: BackgroundChild, message: Message, delivery: 'followup' | 'steer'): void {
    const idle = !this.working(entry)
    entry.agent.send(message, idle ? 'followup' : delivery)
    if (idle) {
      clearTimeout(entry.timer)
      entry.timer = setTimeout(() => entry.agent.cancel('timeout'), this.config.timeoutMs)
      entry.timer.unref()
    }
  }

  private turnEnded(id: string): void {
    const entry = this.entries.get(id)
    if (!entry) return
    const agent = entry.agent
    clearTimeout(entry.timer)
    const end = agent.session.last('turn/end')?.data
    if (end) entry.lastEnd = end.reason
    const result = outcome(agent)
    const how =
      end?.reason === 'completed'
        ? 'finished'
        : end?.reason === 'aborted'
          ? `was stopped (${end.cause ?? 'cancelled'})`
          : 'ended with an error'
    const text =
      `[Background subagent ${agent.id} ("${entry.description}") ${how}.]\n` +
      (typeof result.content === 'string' ? result.content : textOf(result.content))
    this.ctx.agents.get(entry.parent)?.inject(notice(text))
  }

  private disposed(agent: Agent): void {
    const entry = this.entries.get(agent.id)
    if (entry) {
      clearTimeout(entry.timer)
      this.entries.delete(agent.id)
      entry.release()
    }
    for (const child of this.entries.values()) if (child.parent === agent.id) void this.ctx.agents.dispose(child.agent)
  }

  private async disposeAll(): Promise<void> {
    await Promise.all([...this.entries.values()].map((entry) => this.ctx.agents.dispose(entry.agent)))
  }
}
