import { mkdtemp, realpath, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as agentPlugin from '@dsh/agent'
import type { Agent, AgentDelta } from '@dsh/agent'
import { type Context as Ctx, Context, type Fiber } from '@dsh/cordis'
import * as llmPlugin from '@dsh/llm'
import * as deepseekPlugin from '@dsh/llm-deepseek'
import type { DeepSeekConfig, RetryConfig } from '@dsh/llm-deepseek'
import { type MockLlm, type RecordedRequest, startMockLlm } from '@dsh/llm-mock'
import * as retryPlugin from '@dsh/llm-retry'
import * as sessionPlugin from '@dsh/session'
import type { AnySessionEvent, Session, SessionEvent, SessionEventType } from '@dsh/session'
import * as writerPlugin from '@dsh/session-persistence'
import * as jsonlPlugin from '@dsh/session-persistence-jsonl'
import * as systemPromptPlugin from '@dsh/system-prompt'
import * as fsSeam from '@dsh/fs'
import * as sandboxPlugin from '@dsh/sandbox'
import * as shellPlugin from '@dsh/shell'
import * as subprocessPlugin from '@dsh/subprocess'
import * as bashPlugin from '@dsh/tool-bash'
import * as fsPlugin from '@dsh/tool-fs'
import * as toolsPlugin from '@dsh/tools'
import { defineTool, type ParameterSchema, type ToolDefinition } from '@dsh/tools'
import { afterEach, expect } from 'vitest'
import * as loopPlugin from '../src/index.ts'
import type { LoopConfig } from '../src/index.ts'
import { collectWarnings } from '@dsh/testkit'

export interface HarnessOptions {
  /** agent-loop config on top of its defaults. */
  loop?: Partial<LoopConfig>
  /** The retry policy of the `deepseek` route (it wins over the llm-retry plugin's own). */
  retry?: Partial<RetryConfig>
  /** Mount JSONL persistence and its writer under a temporary `sessions` folder. */
  persistence?: boolean
}

export interface Harness {
  root: Context
  mock: MockLlm
  /** The agent's cwd: a fresh temporary folder. */
  workspace: string
  /** Where persisted logs go (when `persistence` is on). */
  sessionsDir: string
  /** Everything logged at warn or error level. */
  warnings: string[]
  probe: Probe
  hang: Hang
  /** The agent-loop plugin's fiber. */
  loop: Fiber
  createAgent(): Promise<Agent>
  dispose(): Promise<void>
}

/** A promise with its settle functions outside. */
export interface Deferred<T = void> {
  promise: Promise<T>
  resolve(value: T): void
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void
  const promise = new Promise<T>((r) => (resolve = r))
  return { promise, resolve }
}

function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve()
    else signal.addEventListener('abort', () => resolve(), { once: true })
  })
}

/**
 * The parameter schemas of the test tools, taken from the real `read` tool.
 * `defineTool` needs zod objects, and this package keeps zod out of its own
 * dependencies: `pick({})` gives an empty object schema, and `read`'s `file_path`
 * field a non-empty string.
 */
function schemas(root: Context): { empty: ParameterSchema; withId: ParameterSchema } {
  const read = root.tools.get('read')
  if (!read) throw new Error('the harness needs tool-fs mounted before the test tools')
  const base = read.parameters
  return { empty: base.pick({}), withId: base.pick({}).extend({ id: base.shape.file_path }) }
}

/**
 * A tool that records overlap: each call (argument `id`) starts, counts the
 * calls already running, and waits until the test releases it (or its signal
 * aborts). Ids starting with `x` are exclusive; the others concurrency-safe.
 * Ids starting with `nan` return a result the session log refuses.
 */
export class Probe {
  /** Calls in the order they started, with how many other probe calls were running then. */
  readonly started: { id: string; othersRunning: number }[] = []
  running = 0
  maxRunning = 0
  /** Release every call as soon as it starts. */
  autoRelease = false
  private readonly gates = new Map<string, Deferred>()
  private watchers: (() => void)[] = []

  private gate(id: string): Deferred {
    let gate = this.gates.get(id)
    if (!gate) {
      gate = deferred()
      this.gates.set(id, gate)
    }
    return gate
  }

  release(...ids: string[]): void {
    for (const id of ids) this.gate(id).resolve()
  }

  /** Resolves once `count` calls have started. */
  whenStarted(count: number): Promise<void> {
    return new Promise((resolve) => {
      const check = () => {
        if (this.started.length < count) return
        this.watchers = this.watchers.filter((w) => w !== check)
        resolve()
      }
      this.watchers.push(check)
      check()
    })
  }

  tool(parameters: ParameterSchema): ToolDefinition {
    return defineTool({
      name: 'probe',
      description: 'Test tool: records how many calls overlap.',
      parameters,
      isConcurrencySafe: (args) => !String(args.id).startsWith('x'),
      execute: async (args, run) => {
        const id = String(args.id)
        this.started.push({ id, othersRunning: this.running })
        this.running++
        this.maxRunning = Math.max(this.maxRunning, this.running)
        for (const watch of [...this.watchers]) watch()
        if (this.autoRelease) this.release(id)
        try {
          await Promise.race([this.gate(id).promise, aborted(run.signal)])
        } finally {
          this.running--
        }
        // An id starting with `nan` returns meta JSON cannot carry: the log refuses it.
        return id.startsWith('nan')
          ? { content: `probe ${id} finished`, meta: { value: Number.NaN } }
          : { content: `probe ${id} finished` }
      },
    })
  }
}

/** A tool that waits on its signal and reports what it saw. */
export class Hang {
  entered = deferred()
  reason: unknown

  tool(parameters: ParameterSchema): ToolDefinition {
    return defineTool({
      name: 'hang',
      description: 'Test tool: waits until it is cancelled.',
      parameters,
      execute: async (_args, run) => {
        this.entered.resolve()
        await aborted(run.signal)
        this.reason = run.signal.reason
        return { content: 'hang stopped' }
      },
    })
  }
}

/**
 * A real cordis tree with the spine mounted, the DeepSeek route pointed at a
 * scripted mock server, fast retries, and the test tools.
 */
export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const savedKey = process.env.DEEPSEEK_API_KEY
  process.env.DEEPSEEK_API_KEY = 'sk-test'
  const mock = await startMockLlm()
  const workspace = await realpath(await mkdtemp(join(tmpdir(), 'dsh-agent-loop-')))
  const sessionsDir = join(workspace, '.home', 'sessions')
  const root = new Context()
  const warnings = collectWarnings(root)

  const retry: RetryConfig = {
    maxRetries: 2,
    initialDelayMs: 1,
    maxDelayMs: 50,
    jitterRatio: 0,
    retryableCodes: [...deepseekPlugin.DEFAULT_RETRYABLE],
    ...options.retry,
  }
  await root.plugin(sessionPlugin)
  await root.plugin(llmPlugin)
  await root.plugin(deepseekPlugin, { baseURL: mock.url, retry } as DeepSeekConfig)
  await root.plugin(retryPlugin, {
    maxRetries: 2,
    initialDelayMs: 1,
    maxDelayMs: 50,
    jitterRatio: 0,
  } as retryPlugin.RetryConfig)
  await root.plugin(systemPromptPlugin, {} as systemPromptPlugin.SystemPromptConfig)
  await root.plugin(toolsPlugin, {} as toolsPlugin.ToolsConfig)
  await root.plugin(fsSeam)
  await root.plugin(subprocessPlugin, {} as never)
  await root.plugin(sandboxPlugin, {} as never)
  await root.plugin(shellPlugin, {} as never)
  await root.plugin(fsPlugin, {} as fsPlugin.FsToolsConfig)
  await root.plugin(bashPlugin, {} as bashPlugin.BashToolConfig)
  if (options.persistence) {
    await root.plugin(jsonlPlugin, { root: sessionsDir })
    await root.plugin(writerPlugin, { batchDelayMs: 0 })
  }
  await root.plugin(agentPlugin, {} as agentPlugin.AgentRegistryConfig)
  const loop = root.plugin(loopPlugin, { maxParallelToolCalls: 10, maxStepsPerTurn: 200, ...options.loop })
  await loop

  const probe = new Probe()
  const hang = new Hang()
  const { empty, withId } = schemas(root)
  await root.plugin({
    name: 'agent-loop-test-tools',
    inject: ['tools'],
    apply(ctx: Ctx) {
      ctx.tools.register(ctx, probe.tool(withId))
      ctx.tools.register(ctx, hang.tool(empty))
    },
  })

  return {
    root,
    mock,
    workspace,
    sessionsDir,
    warnings,
    probe,
    hang,
    loop,
    createAgent: () => root.agents.create({ cwd: workspace }),
    async dispose() {
      await root.fiber.dispose()
      await mock.close()
      await rm(workspace, { recursive: true, force: true })
      if (savedKey === undefined) delete process.env.DEEPSEEK_API_KEY
      else process.env.DEEPSEEK_API_KEY = savedKey
    },
  }
}

/**
 * For a test file: returns `setup(options)`, which starts a harness for the
 * current test, and registers the `afterEach` that disposes it and checks
 * that nothing was logged as a warning (a failing listener, a broken tool
 * pipeline).
 */
export function harnessPerTest(): (options?: HarnessOptions) => Promise<Harness> {
  let current: Harness | undefined
  afterEach(async () => {
    const warnings = current?.warnings ?? []
    await current?.dispose()
    current = undefined
    expect(warnings).toEqual([])
  })
  return async (options = {}) => {
    current = await startHarness(options)
    return current
  }
}

// ---- reading the log ----

export function events(session: Session | Agent): AnySessionEvent[] {
  const s = 'session' in session ? session.session : session
  return s.events as AnySessionEvent[]
}

/** The tool calls of the agent's replies, in the model's order. */
export function modelCalls(agent: Agent) {
  return ofType(agent, 'assistant/message').flatMap((m) =>
    m.data.message.content.flatMap((b) => (b.type === 'tool-call' ? [b] : [])),
  )
}

export function ofType<K extends SessionEventType>(agent: Agent, type: K): SessionEvent<K>[] {
  return agent.session.events.filter((e): e is SessionEvent<K> => e.type === type)
}

/** The events of turn `turn`, from its `turn/start` to its `turn/end`. */
export function turnEvents(agent: Agent, turn: number): AnySessionEvent[] {
  const all = events(agent)
  const start = all.findIndex((e) => e.type === 'turn/start' && e.data.turn === turn)
  const end = all.findIndex((e) => e.type === 'turn/end' && e.data.turn === turn)
  if (start < 0 || end < 0) throw new Error(`turn ${turn} is not in the log: ${all.map((e) => e.type).join(', ')}`)
  return all.slice(start, end + 1)
}

export function typesOf(list: readonly SessionEvent[]): string[] {
  return list.map((e) => e.type)
}

export function lastTurnEnd(agent: Agent): SessionEvent<'turn/end'> {
  const end = agent.session.last('turn/end')
  if (!end) throw new Error('no turn has ended')
  return end
}

/** The text of a message's text blocks (or of a tool result's content). */
export function textOf(message: {
  content: readonly { type: string; text?: string; content?: readonly { type: string; text?: string }[] }[]
}): string {
  return message.content
    .map((b) =>
      b.type === 'text'
        ? (b.text ?? '')
        : b.type === 'tool-result'
          ? (b.content ?? []).map((c) => c.text ?? '').join('')
          : '',
    )
    .join('')
}

/**
 * Each `tool/call` has exactly one `tool/result`, and so does each tool call
 * the model made (a call never dispatched has a result but no `tool/call`).
 */
export function checkToolPairing(agent: Agent): void {
  const results = new Map<string, number>()
  for (const r of ofType(agent, 'tool/result')) results.set(r.data.callId, (results.get(r.data.callId) ?? 0) + 1)
  const made = modelCalls(agent).map((c) => c.id as string)
  const called = ofType(agent, 'tool/call').map((c) => c.data.callId as string)
  for (const id of [...made, ...called]) {
    if (results.get(id) !== 1) throw new Error(`tool call ${id} has ${results.get(id) ?? 0} results`)
  }
  for (const id of results.keys())
    if (!made.includes(id)) throw new Error(`tool result ${id} answers no call the model made`)
}

// ---- the wire ----

/** The chat messages the adapter sent in a request. */
export function wireMessages(request: RecordedRequest | undefined): any[] {
  if (!request) throw new Error('no such request')
  return request.body.messages as any[]
}

// ---- waiting on events ----

/** Resolves with the text streamed so far once the agent's text deltas add up to at least `text`. */
export function whenStreamed(root: Context, agent: Agent, text: string): Promise<string> {
  return new Promise((resolve) => {
    let seen = ''
    const off = root.on('agent/delta', (from, delta) => {
      if (from !== agent || delta.kind !== 'text') return
      seen += delta.delta
      if (seen.length >= text.length) {
        off()
        resolve(seen)
      }
    })
  })
}

/** Resolves with the first delta of the agent that `accept` takes. */
export function whenDelta(root: Context, agent: Agent, accept: (delta: AgentDelta) => boolean): Promise<AgentDelta> {
  return new Promise((resolve) => {
    const off = root.on('agent/delta', (from, delta) => {
      if (from !== agent || !accept(delta)) return
      off()
      resolve(delta)
    })
  })
}

/** Resolves with the first session event of `type` appended to the agent's session from now on. */
export function whenLogged<K extends SessionEventType>(root: Context, agent: Agent, type: K): Promise<SessionEvent<K>> {
  return new Promise((resolve) => {
    const off = root.on('session/event', (session, event) => {
      if (session !== agent.session || event.type !== type) return
      off()
      resolve(event as SessionEvent<K>)
    })
  })
}
