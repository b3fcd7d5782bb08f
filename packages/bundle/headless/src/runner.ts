import { type Agent, summarizeTurns } from '@dsh/agent'
import type {} from '@dsh/cmdline'
import type { Context } from '@dsh/cordis'
import type {} from '@dsh/loader'
import type {} from '@dsh/plan-mode'
import type { SessionEvent, SessionId } from '@dsh/session'
import { diagnosticCounts, resultDiagnostics } from '@dsh/tools'
import type {} from '@dsh/session-persistence'
import { meterUsage } from '@dsh/token-meter'
import type {} from './startup.ts'
import { joinTask, readTaskInput } from './stdin.ts'

export const name = 'headless-runner'
export const inject = ['headlessStartup', 'agents', 'tools', 'appExit']

/**
 * Runs the task from the command line as one turn of a new (or resumed)
 * agent in the current directory, prints the answer, and exits 0 only when
 * the turn completed. `--json` prints every event and delta as JSON lines.
 */
export function apply(ctx: Context) {
  const startup = ctx.headlessStartup
  const out = (line: string) => process.stdout.write(`${line}\n`)
  const err = (line: string) => process.stderr.write(`${line}\n`)

  /** The id of the most recently written top-level session started in the current directory. */
  const latestSessionHere = async (): Promise<string> => {
    const persistence = ctx.get('sessionPersistence')
    if (!persistence) throw new Error('--continue needs stored sessions, and this profile has no session persistence')
    const cwd = process.cwd()
    const here = (await persistence.list()).filter((stored) => stored.cwd === cwd && !stored.parentSession)
    // Some file systems keep whole seconds: the later start breaks a tie.
    const latest = here.sort((a, b) => b.updatedAt - a.updatedAt || b.createdAt - a.createdAt)[0]
    if (!latest) throw new Error(`--continue: no stored session was started in ${cwd}`)
    return latest.id
  }

  const run = async () => {
    // Read before any session exists, so bad input leaves nothing behind.
    if (startup.stdin && process.stdin.isTTY) err('dsh: reading the task from standard input; end it with Ctrl+D')
    const task = startup.stdin ? joinTask(startup.task, await readTaskInput(process.stdin)) : startup.task
    if (!task) throw new Error('a task is required, and standard input was empty')
    // A driver whose row starts after this one (it waits for a service) is waited for.
    if (!ctx.agents.driven) await ctx.get('loader')?.settle()
    let agent: Agent
    const overrides = {
      ...(startup.model ? { model: startup.model } : {}),
      ...(startup.provider ? { provider: startup.provider } : {}),
      ...(startup.maxSteps ? { maxSteps: startup.maxSteps } : {}),
    }
    const resume = startup.continue ? await latestSessionHere() : startup.resume
    if (resume) {
      const resumed = await ctx.agents.resume(resume as SessionId, overrides)
      for (const problem of resumed.problems) err(`dsh: warning: ${problem}`)
      agent = resumed.agent
    } else {
      // Announced with the run's first published event, which waits for the stored input: no need to wait here.
      agent = await ctx.agents.create({ cwd: process.cwd(), options: overrides, waitForLog: false })
    }
    if (startup.plan) {
      const planMode = ctx.get('planMode')
      if (!planMode) throw new Error('--plan needs plan mode, and this profile has no plan-mode plugin')
      planMode.set(agent.session, true)
    }
    const from = agent.session.nextSeq
    // The id goes out with the run's first published event: by then the task's message is stored (see holdPublished).
    let announced = false
    const announce = () => {
      if (announced) return
      announced = true
      if (startup.json) out(JSON.stringify({ type: 'session', sessionId: agent.id, resumed: !!resume }))
      if (startup.verbose) err(`dsh: session ${agent.id}`)
    }
    ctx.on('session/published', (session, event) => {
      if (session !== agent.session || event.seq < from) return
      announce()
      if (startup.json) out(JSON.stringify({ type: 'event', event }))
      if (startup.verbose) {
        if (event.type === 'tool/call') {
          const call = (event as SessionEvent<'tool/call'>).data
          err(`→ ${ctx.tools.present(call, session.meta.cwd).title}`)
        } else if (event.type === 'tool/result') {
          const { name, error, meta } = (event as SessionEvent<'tool/result'>).data
          if (error) err(`  ✗ ${name}: ${error.code}: ${error.message}`)
          const found = resultDiagnostics(meta)
          if (found?.length) err(`  ⚠ ${name}: ${diagnosticCounts(found)} reported by the language server`)
        }
      }
    })
    ctx.on('agent/delta', (source, delta) => {
      if (source !== agent) return
      announce()
      if (startup.json) out(JSON.stringify({ type: 'delta', ...delta }))
      else if (startup.reasoning && delta.kind === 'reasoning') process.stderr.write(delta.delta)
    })
    agent.followup(task)
    await agent.whenIdle()

    const ran = agent.session.events.filter((e) => e.seq >= from)
    const { end, text: answer } = summarizeTurns(ran)
    const llm = ctx.get('llm')
    const meter = meterUsage(ran, (provider, model) => llm?.modelInfo(provider, model))
    const reason = end?.data.reason ?? 'aborted'
    const failure = end?.data.error
    announce()
    if (startup.json) {
      out(
        JSON.stringify({
          type: 'result',
          sessionId: agent.id,
          reason,
          text: answer,
          usage: meter.usage,
          ...(meter.costUsd !== undefined ? { costUsd: meter.costUsd } : {}),
          durationMs: meter.turns.reduce((sum, turn) => sum + (turn.durationMs ?? 0), 0),
          steps: meter.turns.reduce((sum, turn) => sum + turn.steps, 0),
          ...(meter.context ? { context: meter.context } : {}),
          ...(failure ? { error: failure } : {}),
        }),
      )
    } else {
      if (startup.reasoning) err('')
      if (answer) out(answer)
    }
    if (reason === 'error' && failure) err(`dsh: ${failure.code}: ${failure.message}`)
    else if (reason === 'max-tokens')
      err('dsh: the reply was cut at the output token limit (max-tokens); the answer may be incomplete')
    else if (reason === 'aborted') err('dsh: the task was stopped before it completed')
    ctx.appExit(reason === 'completed' ? 0 : 1)
  }

  ctx.effect(() => {
    run().catch((error: unknown) => {
      err(`dsh: ${error instanceof Error ? error.message : String(error)}`)
      ctx.appExit(1)
    })
    return () => {}
  }, 'headless run')
}
