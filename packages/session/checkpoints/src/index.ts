import type { Agent } from '@dsh/agent'
import { type Context, Schema } from '@dsh/cordis'
import type { SessionEvent } from '@dsh/session'
import { errorMessage, type ToolExecution, type ToolResult } from '@dsh/tools'
import { Checkpoints } from './service.ts'
export { rewindSession } from './rewind.ts'

export type { ChangedFile, FileChange } from './git.ts'
export {
  CHECKPOINT_EVENT,
  type CheckpointEvent,
  Checkpoints,
  type RewindOptions,
  type RewindResult,
} from './service.ts'

export const name = 'checkpoints'
export const inject = ['sessions', 'subprocess', 'agents']

export interface CheckpointsConfig {
  root: string
  maxFileBytes: number
  timeoutMs: number
  exclude: string[]
}

export const Config: Schema<CheckpointsConfig> = Schema.object({
  root: Schema.string().required().description('The folder of the shadow repositories, one per workspace.'),
  maxFileBytes: Schema.natural()
    .default(4 * 1024 * 1024)
    .description('Files larger than this are not recorded (a rewind leaves them as they are).'),
  timeoutMs: Schema.natural().default(60_000).description('How long one git command of a snapshot may run.'),
  exclude: Schema.array(String)
    .default([])
    .description('Absolute paths never recorded when a workspace contains them (dsh home); the root always is.'),
})

/** Per session: the last turn that has a snapshot, and whether dsh changed files since the last one. */
interface Tracking {
  turn: number
  dirty: boolean
}

/**
 * Takes a snapshot before the first call of a turn to a tool that is not
 * read-only, and another when such a turn ends, and provides `ctx.checkpoints`.
 */
export function apply(ctx: Context, config: CheckpointsConfig) {
  ctx.plugin(Checkpoints, { ...config, exclude: [...config.exclude, config.root] })
  const tracking = new Map<string, Tracking>()

  ctx.inject(['checkpoints'], (ctx) => {
    ctx.on('tools/execute', async (execution: ToolExecution, next: () => Promise<ToolResult>) => {
      const agent = ctx.agents.get(execution.run.sessionId)
      if (!agent || execution.tool.readOnly) return next()
      const { turn, open } = agent.session.turnState()
      const state = tracking.get(agent.id)
      if (open && state?.turn !== turn) {
        const messageId = turnPrompt(agent.session.events, turn)
        tracking.set(agent.id, { turn, dirty: true })
        try {
          await ctx.checkpoints.before(agent.session, turn, messageId ?? '')
        } catch (error) {
          ctx.logger.warn('no snapshot before turn %d of %s: %s', turn, agent.id, errorMessage(error))
        }
      } else if (state) state.dirty = true
      return next()
    })

    const settle = async (agent: Agent) => {
      const state = tracking.get(agent.id)
      if (!state?.dirty) return
      state.dirty = false
      try {
        await ctx.checkpoints.after(agent.session, state.turn)
      } catch (error) {
        ctx.logger.warn('no snapshot after turn %d of %s: %s', state.turn, agent.id, errorMessage(error))
      }
    }
    ctx.on('agent/turn-stopping', (agent) => settle(agent))
    ctx.on('agent/turn-end', (agent) => settle(agent))
    ctx.on('agent/disposed', (agent) => void tracking.delete(agent.id))
  })
}

/** The id of the user message that started `turn`. */
function turnPrompt(events: readonly SessionEvent[], turn: number): string | undefined {
  let inTurn = false
  for (const event of events) {
    if (event.type === 'turn/start') inTurn = (event as SessionEvent<'turn/start'>).data.turn === turn
    else if (inTurn && event.type === 'user/message') {
      const { message } = (event as SessionEvent<'user/message'>).data
      if (message.source.kind === 'user') return message.id
    }
  }
  return undefined
}
