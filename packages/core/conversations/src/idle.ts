import type { Agent } from '@dsh/agent'
import type { Context } from '@dsh/cordis'

/**
 * Unloads the agents of top-level sessions that sit idle with no tab
 * watching them: after `delayMs`, the agent is disposed, which closes its
 * session and seals the log. The next message resumes it from the log, so a
 * long-running surface (`dsh web`) holds only the sessions in use. `delayMs` 0 keeps
 * every agent until exit.
 */
export class IdleUnloader {
  private readonly timers = new Map<string, ReturnType<typeof setTimeout>>()

  constructor(
    private readonly ctx: Context,
    private readonly delayMs: number,
    /** Whether a client is subscribed to the session. */
    private readonly watched: (sessionId: string) => boolean,
    /** Disposes the agent (its session is closed and its log sealed). */
    private readonly unload: (agent: Agent) => Promise<void>,
    /** Where a failed unload is logged. */
    private readonly logName: string,
  ) {
    if (delayMs <= 0) return
    ctx.on('agent/status', (agent, status) => (status === 'idle' ? this.arm(agent.id) : this.disarm(agent.id)))
    ctx.on('agent/created', (agent) => this.arm(agent.id))
    ctx.on('agent/disposed', (agent) => this.disarm(agent.id))
    ctx.effect(
      () => () => {
        for (const timer of this.timers.values()) clearTimeout(timer)
        this.timers.clear()
      },
      'idle agent timers',
    )
  }

  /** Starts the countdown of an idle, unwatched agent (again, from now). */
  arm(sessionId: string): void {
    if (this.delayMs <= 0) return
    this.disarm(sessionId)
    if (!this.unloadable(this.ctx.agents.get(sessionId))) return
    const timer = setTimeout(() => {
      this.timers.delete(sessionId)
      const agent = this.ctx.agents.get(sessionId)
      if (this.unloadable(agent))
        void this.unload(agent).catch((error: unknown) =>
          this.ctx.logger(this.logName).warn('unloading idle session %s failed: %s', sessionId, error),
        )
    }, this.delayMs)
    timer.unref()
    this.timers.set(sessionId, timer)
  }

  disarm(sessionId: string): void {
    const timer = this.timers.get(sessionId)
    if (timer) clearTimeout(timer)
    this.timers.delete(sessionId)
  }

  /** Idle, unwatched, and not a subagent's (its parent's task owns it). */
  private unloadable(agent: Agent | undefined): agent is Agent {
    return !!agent && agent.status === 'idle' && !agent.session.meta.parentSession && !this.watched(agent.id)
  }
}
