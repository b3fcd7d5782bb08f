import { type Context as Ctx, Context } from '@dsh/cordis'
import type { ToolCallId } from '@dsh/llm'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import * as toolsPlugin from '../src/index.ts'
import {
  type ApprovalBroker,
  type ApprovalVerdict,
  defineTool,
  type ToolCall,
  type ToolDefinition,
  ToolError,
  type ToolResult,
  type ToolRunContext,
  type ToolRunOptions,
  type ToolsConfig,
} from '../src/index.ts'
import { bootTools, mountTools } from './tree.ts'

/** A tool that takes no arguments. */
function noArgsTool(name: string, description: string, execute: ToolDefinition<z.ZodObject>['execute']) {
  return defineTool({ name, description, parameters: z.object({}), execute })
}

let root: Context

beforeEach(() => {
  root = new Context()
})

afterEach(async () => {
  await root.fiber.dispose()
})

const boot = (config: Partial<ToolsConfig> = {}) => bootTools(root, config)
const mount = (...definitions: ToolDefinition[]) => mountTools(root, 'test-tools', ...definitions)

let calls = 0
function call(name: string, args: unknown): ToolCall {
  calls += 1
  return {
    callId: `call-${calls}` as ToolCallId,
    name,
    arguments: typeof args === 'string' ? args : JSON.stringify(args),
  }
}

function options(overrides: Partial<ToolRunOptions> = {}): ToolRunOptions {
  return {
    signal: new AbortController().signal,
    cwd: process.cwd(),
    sessionId: 'session-1',
    sessionState: new Map(),
    ...overrides,
  }
}

function text(result: ToolResult): string {
  return result.content.map((block) => (block.type === 'text' ? block.text : `<${block.type}>`)).join('\n')
}

const echo = defineTool({
  name: 'echo',
  description: 'Echo the text back.',
  parameters: z.object({
    text: z.string().describe('What to say.'),
    times: z.number().int().min(1).optional(),
    loud: z.boolean().default(false),
  }),
  isConcurrencySafe: (args) => args.times === undefined,
  execute: (args) => ({
    content: (args.loud ? args.text.toUpperCase() : args.text).repeat(args.times ?? 1),
    meta: { times: args.times ?? 1 },
  }),
})

/** A tool whose body waits until its signal aborts, recording what it saw. */
function hanging(seen: { signal?: AbortSignal; started?: () => void }, timeoutMs?: number) {
  return defineTool({
    name: 'hang',
    description: 'Waits for its signal.',
    parameters: z.object({}),
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
    execute: (_args, run) =>
      new Promise((resolve) => {
        seen.signal = run.signal
        run.signal.addEventListener('abort', () => resolve({ content: 'stopped' }), { once: true })
        seen.started?.()
      }),
  })
}

describe('registry', () => {
  it('lists, describes and removes the tools a plugin registered when that plugin is disposed', async () => {
    const tools = await boot()
    let changes = 0
    root.on('tools/changed', () => {
      changes += 1
    })
    const other = noArgsTool('alpha', 'First by name.', () => ({ content: 'a' }))
    const fiber = await mount(echo, other)
    expect(tools.list().map((tool) => tool.name)).toEqual(['alpha', 'echo'])
    expect(tools.schemas().map((schema) => schema.name)).toEqual(['alpha', 'echo'])
    expect(tools.get('echo')).toBe(echo)
    expect(changes).toBe(2)

    await fiber.dispose()
    expect(tools.list()).toEqual([])
    expect(tools.get('echo')).toBeUndefined()
    expect(changes).toBe(4)
    const result = await tools.execute(call('echo', { text: 'hi' }), options())
    expect(result.error?.code).toBe('UNKNOWN_TOOL')
  })

  it('removes a tool early through the disposer register returns', async () => {
    const tools = await boot()
    const fiber = root.plugin({
      name: 'early',
      inject: ['tools'],
      apply: (ctx: Ctx) => void offs.push(ctx.tools.register(ctx, echo)),
    })
    const offs: Array<() => void> = []
    await fiber
    expect(tools.get('echo')).toBeDefined()
    offs[0]!()
    expect(tools.get('echo')).toBeUndefined()
  })

  it('rejects a second tool with a taken name, naming it', async () => {
    const tools = await boot()
    await mount(echo)
    expect(() => tools.register(root, { ...echo, description: 'Another echo.' })).toThrow(/"echo"/)
    expect(tools.get('echo')).toBe(echo)
  })

  it('rejects malformed definitions where they are written', () => {
    expect(() =>
      defineTool({ name: 'bad name', description: 'x', parameters: z.object({}), execute: () => ({ content: '' }) }),
    ).toThrow(/name/)
    expect(() =>
      defineTool({ name: 'ok', description: '', parameters: z.object({}), execute: () => ({ content: '' }) }),
    ).toThrow(/description/)
    expect(() =>
      defineTool({
        name: 'ok',
        description: 'x',
        parameters: z.string() as unknown as z.ZodObject,
        execute: () => ({ content: '' }),
      }),
    ).toThrow(/zod object/)
  })

  it('sends the model a JSON Schema of what it may pass', async () => {
    const tools = await boot()
    await mount(echo)
    expect(tools.schemas()).toEqual([
      {
        name: 'echo',
        description: 'Echo the text back.',
        parameters: {
          type: 'object',
          properties: {
            text: { type: 'string', description: 'What to say.' },
            times: { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER },
            loud: { type: 'boolean', default: false },
          },
          required: ['text'],
        },
      },
    ])
  })

  it('sends a raw inputSchema as is, while parameters still validate', async () => {
    const tools = await boot()
    const inputSchema = {
      type: 'object',
      properties: { n: { type: 'number', format: 'x-custom' } },
      required: ['n'],
      $defs: { unused: { type: 'string' } },
    }
    const raw = defineTool({
      name: 'raw',
      description: 'A tool with a JSON Schema from elsewhere.',
      parameters: z.looseObject({}),
      inputSchema,
      execute: (args) => ({ content: JSON.stringify(args) }),
    })
    await mount(raw)
    expect(tools.schemas()).toEqual([
      { name: 'raw', description: 'A tool with a JSON Schema from elsewhere.', parameters: inputSchema },
    ])
    expect(text(await tools.execute(call('raw', { n: 1, extra: true }), options()))).toBe('{"n":1,"extra":true}')
    expect((await tools.execute(call('raw', '[1]'), options())).error?.code).toBe('INVALID_ARGUMENTS')
  })

  it('rejects an inputSchema that does not describe an object, naming the tool', () => {
    const base = { description: 'x', parameters: z.looseObject({}), execute: () => ({ content: '' }) }
    expect(() => defineTool({ ...base, name: 'str', inputSchema: { type: 'string' } })).toThrow(
      /tool "str": inputSchema must describe an object/,
    )
    expect(() => defineTool({ ...base, name: 'arr', inputSchema: [] as never })).toThrow(
      /tool "arr": inputSchema must be a JSON Schema object/,
    )
  })

  it('restricts what one session is shown and may call, until the restriction is disposed', async () => {
    const tools = await boot()
    const other = noArgsTool('alpha', 'First by name.', () => ({ content: 'a' }))
    await mount(echo, other)
    let off = () => {}
    const fiber = root.plugin({
      name: 'restrictor',
      inject: ['tools'],
      apply: (ctx: Ctx) => void (off = ctx.tools.restrict(ctx, 'child', (name) => name === 'alpha')),
    })
    await fiber
    expect(tools.schemas('child').map((schema) => schema.name)).toEqual(['alpha'])
    expect(tools.schemas('session-1').map((schema) => schema.name)).toEqual(['alpha', 'echo'])
    expect(tools.schemas().map((schema) => schema.name)).toEqual(['alpha', 'echo'])
    const refused = await tools.execute(call('echo', { text: 'hi' }), options({ sessionId: 'child' }))
    expect(refused.error?.code).toBe('TOOL_NOT_AVAILABLE')
    expect(text(refused)).toBe('Error: tool "echo" is not available in this session. Available tools: alpha.')
    expect(text(await tools.execute(call('alpha', {}), options({ sessionId: 'child' })))).toBe('a')

    const second = tools.restrict(root, 'child', () => false)
    expect(tools.schemas('child')).toEqual([])
    second()
    off()
    expect(tools.schemas('child').map((schema) => schema.name)).toEqual(['alpha', 'echo'])
    tools.restrict(fiber.ctx, 'child', (name) => name === 'echo')
    await fiber.dispose()
    expect(tools.schemas('child').map((schema) => schema.name)).toEqual(['alpha', 'echo'])
  })

  it('is provided as ctx.tools by the plugin module, with its config', async () => {
    await root.plugin(toolsPlugin, { maxResultChars: 10 } as ToolsConfig)
    const fiber = await new Promise<Ctx>((resolve) => root.inject(['tools'], (ctx) => resolve(ctx)))
    fiber.tools.register(fiber, echo)
    const result = await fiber.tools.execute(call('echo', { text: 'x'.repeat(30) }), options())
    expect(text(result)).toMatch(/^x{10}\n+\[output truncated: 20 of 30 characters dropped/)
  })
})

describe('argument errors', () => {
  it('reports an unknown tool and lists the ones that exist', async () => {
    const tools = await boot()
    await mount(echo)
    const result = await tools.execute(call('ehco', { text: 'hi' }), options())
    expect(result.isError).toBe(true)
    expect(result.error?.code).toBe('UNKNOWN_TOOL')
    expect(text(result)).toContain('"ehco"')
    expect(text(result)).toContain('Available tools: echo.')
  })

  it('reports arguments that are not JSON, with the parse error', async () => {
    const tools = await boot()
    await mount(echo)
    const result = await tools.execute(call('echo', '{"text": "hi"'), options())
    expect(result.error?.code).toBe('INVALID_JSON')
    expect(text(result)).toMatch(/^Error: the arguments for tool "echo" are not valid JSON \(.+\)/)
  })

  it('lists every schema problem with the path of the field', async () => {
    const tools = await boot()
    await mount(echo)
    const result = await tools.execute(call('echo', { text: 5, times: 0 }), options())
    expect(result.error?.code).toBe('INVALID_ARGUMENTS')
    const lines = text(result).split('\n')
    expect(lines[0]).toBe('Error: invalid arguments for tool "echo":')
    expect(lines).toContainEqual(expect.stringMatching(/^ {2}- text: .*expected string/))
    expect(lines).toContainEqual(expect.stringMatching(/^ {2}- times: .*>=1/))
  })

  it('treats empty arguments as an empty object', async () => {
    const tools = await boot()
    await mount(noArgsTool('now', 'No parameters.', () => ({ content: 'ok' })))
    expect(await tools.execute(call('now', ''), options())).toEqual({
      content: [{ type: 'text', text: 'ok' }],
      isError: false,
    })
  })
})

describe('execution', () => {
  it('runs the body with validated arguments, defaults applied, and its run context', async () => {
    const tools = await boot()
    let seen: ToolRunContext | undefined
    await mount(
      defineTool({
        name: 'probe',
        description: 'Reports its context.',
        parameters: z.object({ n: z.number().default(3) }),
        execute: (args, run) => {
          seen = run
          return { content: [{ type: 'text', text: `n=${args.n}` }], meta: { ok: true } }
        },
      }),
    )
    const state = new Map<string, unknown>()
    const c = call('probe', {})
    const result = await tools.execute(c, options({ sessionState: state, cwd: '/tmp', sessionId: 's9' }))
    expect(result).toEqual({ content: [{ type: 'text', text: 'n=3' }], isError: false, meta: { ok: true } })
    expect(seen).toMatchObject({ callId: c.callId, toolName: 'probe', cwd: '/tmp', sessionId: 's9' })
    expect(seen?.sessionState).toBe(state)
  })

  it('turns a throwing body into TOOL_ERROR, a ToolError into its own code, and isError output into TOOL_FAILED', async () => {
    const tools = await boot()
    await mount(
      noArgsTool('boom', 'Throws.', () => Promise.reject(new Error('disk on fire'))),
      defineTool({
        name: 'coded',
        description: 'Throws a ToolError.',
        parameters: z.object({}),
        execute: () => {
          throw new ToolError('FS_NOT_FOUND', 'no such file: a.txt')
        },
      }),
      noArgsTool('sad', 'Reports failure.', () => ({ content: 'it did not work', isError: true })),
    )
    const boom = await tools.execute(call('boom', {}), options())
    expect(boom.error).toEqual({ code: 'TOOL_ERROR', message: 'tool "boom" failed: disk on fire' })
    expect(text(boom)).toBe('Error: tool "boom" failed: disk on fire')
    const coded = await tools.execute(call('coded', {}), options())
    expect(coded.error).toEqual({ code: 'FS_NOT_FOUND', message: 'no such file: a.txt' })
    const sad = await tools.execute(call('sad', {}), options())
    expect(sad).toEqual({
      content: [{ type: 'text', text: 'it did not work' }],
      isError: true,
      error: { code: 'TOOL_FAILED', message: 'it did not work' },
    })
  })

  it('times out a slow body, aborting its own signal', async () => {
    const tools = await boot()
    const seen: { signal?: AbortSignal } = {}
    await mount(hanging(seen, 20))
    const caller = new AbortController()
    const result = await tools.execute(call('hang', {}), options({ signal: caller.signal }))
    expect(result.error?.code).toBe('TIMEOUT')
    expect(text(result)).toContain('timed out after 20ms')
    expect(seen.signal?.aborted).toBe(true)
    expect((seen.signal?.reason as Error).name).toBe('TimeoutError')
    expect(caller.signal.aborted).toBe(false)
  })

  it('applies the configured default timeout to tools without their own', async () => {
    const tools = await boot({ defaultTimeoutMs: 15 })
    const seen: { signal?: AbortSignal } = {}
    await mount(hanging(seen))
    const result = await tools.execute(call('hang', {}), options())
    expect(result.error?.code).toBe('TIMEOUT')
    expect(text(result)).toContain('after 15ms')
  })

  it('stops waiting for a body that ignores its signal after the grace', async () => {
    const tools = await boot({ abortGraceMs: 10 })
    await mount(
      defineTool({
        name: 'stubborn',
        description: 'Never ends.',
        parameters: z.object({}),
        timeoutMs: 10,
        execute: () => new Promise(() => {}),
      }),
    )
    const result = await tools.execute(call('stubborn', {}), options())
    expect(result.error?.code).toBe('TIMEOUT')
  })

  it('reports CANCELLED when the caller aborts mid-call, and aborts the body', async () => {
    const tools = await boot()
    const caller = new AbortController()
    const seen: { signal?: AbortSignal; started?: () => void } = {}
    seen.started = () => caller.abort()
    await mount(hanging(seen))
    const result = await tools.execute(call('hang', {}), options({ signal: caller.signal }))
    expect(result.error?.code).toBe('CANCELLED')
    expect(seen.signal?.aborted).toBe(true)
  })

  it('does not start a call whose caller has already cancelled', async () => {
    const tools = await boot()
    const seen: { signal?: AbortSignal } = {}
    await mount(hanging(seen))
    const caller = new AbortController()
    caller.abort()
    const result = await tools.execute(call('hang', {}), options({ signal: caller.signal }))
    expect(result.error?.code).toBe('CANCELLED')
    expect(seen.signal).toBeUndefined()
  })

  it('cuts long text output and says how much was dropped', async () => {
    const tools = await boot({ maxResultChars: 100 })
    await mount(echo)
    const result = await tools.execute(call('echo', { text: 'ab', times: 125 }), options())
    expect(result.content).toHaveLength(2)
    expect(result.content[0]).toEqual({ type: 'text', text: 'ab'.repeat(50) })
    expect(text(result)).toContain('150 of 250 characters dropped')
    expect(result.meta).toEqual({ times: 125 })
  })

  it('answers isConcurrencySafe only for a literal true on valid arguments', async () => {
    const tools = await boot()
    await mount(
      echo,
      defineTool({
        name: 'truthy',
        description: 'Says yes loosely.',
        parameters: z.object({}),
        isConcurrencySafe: () => 'yes' as unknown as boolean,
        execute: () => ({ content: '' }),
      }),
    )
    expect(tools.isConcurrencySafe('echo', '{"text":"a"}')).toBe(true)
    expect(tools.isConcurrencySafe('echo', '{"text":"a","times":2}')).toBe(false)
    expect(tools.isConcurrencySafe('echo', '{"text":5}')).toBe(false)
    expect(tools.isConcurrencySafe('echo', '{"text":')).toBe(false)
    expect(tools.isConcurrencySafe('truthy', '{}')).toBe(false)
    expect(tools.isConcurrencySafe('nope', '{}')).toBe(false)
  })
})

describe('pre-execute and approval', () => {
  function counted() {
    const state = { runs: 0 }
    const tool = defineTool({
      name: 'risky',
      description: 'Does something that may need approval.',
      parameters: z.object({ target: z.string() }),
      execute: (args) => {
        state.runs += 1
        return { content: `did ${args.target}` }
      },
    })
    return { state, tool }
  }

  it('denies with the reason, without running the body', async () => {
    const tools = await boot()
    const { state, tool } = counted()
    await mount(tool)
    root.on('tools/pre-execute', async (execution, next) =>
      execution.args.target === 'prod' ? { kind: 'deny', reason: 'production is off limits' } : next(),
    )
    const denied = await tools.execute(call('risky', { target: 'prod' }), options())
    expect(denied.error?.code).toBe('DENIED')
    expect(text(denied)).toContain('production is off limits')
    expect(state.runs).toBe(0)
    expect(text(await tools.execute(call('risky', { target: 'dev' }), options()))).toBe('did dev')
  })

  it('denies an ask when no approver is set, telling the model no one could approve it', async () => {
    const tools = await boot()
    const { state, tool } = counted()
    await mount(tool)
    root.on('tools/pre-execute', async () => ({ kind: 'ask', reason: 'writes outside the workspace' }))
    const result = await tools.execute(call('risky', { target: 'x' }), options())
    expect(result.error?.code).toBe('DENIED')
    expect(text(result)).toContain('writes outside the workspace')
    expect(text(result)).toContain('no one is available to approve it')
    expect(state.runs).toBe(0)
  })

  /** A broker that answers every request with `verdict` and records the reason and scope it was asked with. */
  async function withBroker(verdict: ApprovalVerdict, decide: (target: string) => Record<string, string> = () => ({})) {
    const tools = await boot()
    const { state, tool } = counted()
    await mount(tool)
    root.on('tools/pre-execute', async (execution) => ({
      kind: 'ask',
      reason: `touches ${String(execution.args.target)}`,
      ...decide(String(execution.args.target)),
    }))
    const asked: Array<{ reason: string; scope: string }> = []
    const broker: ApprovalBroker = {
      approve: async (request) => {
        expect(request.run.callId).toBe(request.call.callId)
        asked.push({ reason: request.reason, scope: request.scope })
        return verdict
      },
      canAsk: () => true,
      forget: () => {},
    }
    await root.plugin({ name: 'broker', inject: ['tools'], apply: (ctx: Ctx) => void ctx.tools.setBroker(ctx, broker) })
    return { tools, state, asked }
  }

  it('runs a call the broker allows, asking it with the reason and a scope of the tool and reason', async () => {
    const { tools, state, asked } = await withBroker({ allowed: true, answer: 'allow-once' })
    expect(text(await tools.execute(call('risky', { target: 'a' }), options()))).toBe('did a')
    expect(asked).toEqual([{ reason: 'touches a', scope: 'tool:risky\u0000touches a' }])
    expect(state.runs).toBe(1)
  })

  it('hands the broker the scope an ask names', async () => {
    const { tools, asked } = await withBroker({ allowed: true, answer: 'remembered' }, (t) => ({ scope: `area ${t}` }))
    expect(text(await tools.execute(call('risky', { target: 'b' }), options()))).toBe('did b')
    expect(asked).toEqual([{ reason: 'touches b', scope: 'area b' }])
  })

  it('passes a rejection message on to the model', async () => {
    const { tools, state } = await withBroker({ allowed: false, answer: 'reject', message: 'use the staging copy' })
    const result = await tools.execute(call('risky', { target: 'a' }), options())
    expect(result.error?.code).toBe('DENIED')
    expect(text(result)).toContain('The user rejected this call. The user said: use the staging copy')
    expect(state.runs).toBe(0)
  })

  it('allows one broker at a time and forgets it with its plugin', async () => {
    const tools = await boot()
    const broker: ApprovalBroker = {
      approve: async () => ({ allowed: true, answer: 'allow-once' }),
      canAsk: () => true,
      forget: () => {},
    }
    const first = root.plugin({
      name: 'first',
      inject: ['tools'],
      apply: (ctx: Ctx) => void ctx.tools.setBroker(ctx, broker),
    })
    await first
    expect(() => tools.setBroker(root, broker)).toThrow(/already set/)
    expect(tools.canApprove('s')).toBe(true)
    const { tool } = counted()
    await mount(tool)
    root.on('tools/pre-execute', async () => ({ kind: 'ask', reason: 'check' }))
    expect(text(await tools.execute(call('risky', { target: 'a' }), options()))).toBe('did a')
    await first.dispose()
    expect(tools.canApprove('s')).toBe(false)
    expect((await tools.execute(call('risky', { target: 'a' }), options())).error?.code).toBe('DENIED')
    const off = tools.setBroker(root, broker)
    expect(text(await tools.execute(call('risky', { target: 'a' }), options()))).toBe('did a')
    off()
    expect((await tools.execute(call('risky', { target: 'a' }), options())).error?.code).toBe('DENIED')
  })

  it('a broker that throws denies the call, naming the failure', async () => {
    const tools = await boot()
    const { state, tool } = counted()
    await mount(tool)
    root.on('tools/pre-execute', async () => ({ kind: 'ask', reason: 'check' }))
    const broker: ApprovalBroker = {
      approve: async () => {
        throw new Error('dialog crashed')
      },
      canAsk: () => true,
      forget: () => {},
    }
    tools.setBroker(root, broker)
    const result = await tools.execute(call('risky', { target: 'a' }), options())
    expect(text(result)).toContain('Asking for approval failed (dialog crashed)')
    expect(state.runs).toBe(0)
  })
})

describe('waterfalls', () => {
  it('lets tools/execute wrap the body and tools/post-execute replace the result', async () => {
    const tools = await boot()
    await mount(echo)
    root.on('tools/execute', async (_execution, next) => {
      const result = await next()
      return { ...result, content: [...result.content, { type: 'text', text: '(measured)' }] }
    })
    root.on('tools/post-execute', async (execution, result, next) => {
      const inner = await next()
      expect(inner).toBe(result)
      return execution.call.name === 'echo' ? { ...inner, meta: { reviewed: true } } : inner
    })
    const result = await tools.execute(call('echo', { text: 'hi' }), options())
    expect(result).toEqual({
      content: [
        { type: 'text', text: 'hi' },
        { type: 'text', text: '(measured)' },
      ],
      isError: false,
      meta: { reviewed: true },
    })
  })

  it('sees denied calls in tools/post-execute', async () => {
    const tools = await boot()
    await mount(echo)
    root.on('tools/pre-execute', async () => ({ kind: 'deny', reason: 'no' }))
    const seen: string[] = []
    root.on('tools/post-execute', async (_execution, result, next) => {
      seen.push(result.error?.code ?? 'ok')
      return next()
    })
    await tools.execute(call('echo', { text: 'hi' }), options())
    expect(seen).toEqual(['DENIED'])
  })

  for (const stage of ['tools/pre-execute', 'tools/execute', 'tools/post-execute'] as const) {
    it(`turns a throwing ${stage} listener into an error result`, async () => {
      const tools = await boot()
      await mount(echo)
      root.on(stage, (() => {
        throw new Error('listener bug')
      }) as never)
      const result = await tools.execute(call('echo', { text: 'hi' }), options())
      expect(result.isError).toBe(true)
      expect(result.error?.code).toBe('PIPELINE_ERROR')
      expect(text(result)).toContain(`${stage}: listener bug`)
    })
  }

  it('turns a post-execute listener returning junk into an error result', async () => {
    const tools = await boot()
    await mount(echo)
    root.on('tools/post-execute', (async () => 'junk') as never)
    const result = await tools.execute(call('echo', { text: 'hi' }), options())
    expect(result.error?.code).toBe('PIPELINE_ERROR')
  })

  it('freezes the arguments listeners see', async () => {
    const tools = await boot()
    await mount(echo)
    let frozen = false
    root.on('tools/pre-execute', async (execution, next) => {
      frozen = Object.isFrozen(execution.args) && Object.isFrozen(execution)
      return next()
    })
    await tools.execute(call('echo', { text: 'hi' }), options())
    expect(frozen).toBe(true)
  })
})
