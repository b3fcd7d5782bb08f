import { Context } from '@dsh/cordis'
import {
  BlockAssembler,
  type ContentBlock,
  type GenerateRequest,
  LlmAdapter,
  LlmRuntime,
  type Message,
  type StreamChunk,
  type ToolCallId,
} from '@dsh/llm'
import {
  anthropicStream,
  geminiStream,
  type MockLlm,
  modelList,
  OPENAI_CHAT_FIELDS,
  reply,
  responsesStream,
  startMockLlm,
} from '@dsh/llm-mock'
import { chatMessage, textBlock } from '@dsh/testkit'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import * as piAi from '../src/index.ts'

let mock: MockLlm
let root: Context

/** Any POST answers from the script: each wire has its own paths. */
const anyPost = (method: string) => method === 'POST' || method === 'GET'

beforeEach(async () => {
  mock = await startMockLlm({ routes: anyPost })
  root = new Context()
  await root.plugin(LlmRuntime)
})

afterEach(async () => {
  await root.fiber.dispose()
  await mock.close()
  vi.unstubAllEnvs()
})

async function load(config: Record<string, unknown>) {
  await root.plugin(piAi, config as unknown as piAi.PiAiConfig)
}

const message = (role: Message['role'], content: ContentBlock[]) =>
  chatMessage(role, content, { provider: 'x', model: 'y' })
const text = textBlock

const TOOL = {
  name: 'read',
  description: 'Read a file.',
  parameters: { type: 'object', properties: { file_path: { type: 'string' } }, required: ['file_path'] },
}

/** A conversation with a tool round trip, so every wire converts calls and results. */
const HISTORY: Message[] = [
  message('system', [text('You are terse.')]),
  message('user', [text('read a.txt')]),
  message('assistant', [
    { type: 'reasoning', text: 'I should read it.' },
    { type: 'tool-call', id: 'call_1' as ToolCallId, name: 'read', arguments: '{"file_path":"a.txt"}' },
  ]),
  message('user', [{ type: 'tool-result', toolCallId: 'call_1' as ToolCallId, content: [text('hello')] }]),
]

async function run(request: Partial<GenerateRequest> & { provider: string; model: string }) {
  const assembler = new BlockAssembler()
  for await (const chunk of root.llm.stream({ messages: HISTORY, tools: [TOOL], ...request })) assembler.push(chunk)
  return assembler
}

describe('the anthropic route (Anthropic Messages)', () => {
  beforeEach(() => vi.stubEnv('ANTHROPIC_API_KEY', 'sk-ant-test'))

  it('sends the history as Messages with the key header and maps text, tool calls and usage back', async () => {
    await load({ providers: { anthropic: { apiKeyEnv: 'ANTHROPIC_API_KEY', baseURL: mock.url } } })
    mock.enqueue(
      anthropicStream({
        text: 'It says hello.',
        toolCalls: [{ id: 'toolu_9', name: 'read', arguments: { file_path: 'b' } }],
      }),
    )
    const result = await run({ provider: 'anthropic', model: 'claude-sonnet-4-5' })
    expect(result.finish).toEqual({ reason: 'tool-calls' })
    expect(result.blocks()).toEqual([
      { type: 'text', text: 'It says hello.' },
      { type: 'tool-call', id: 'toolu_9', name: 'read', arguments: '{"file_path":"b"}' },
    ])
    expect(result.usage).toEqual({ inputTokens: 11, outputTokens: 7, cacheReadTokens: 0 })
    const [request] = mock.requests
    expect(request?.path).toBe('/v1/messages')
    expect(request?.headers['x-api-key']).toBe('sk-ant-test')
    expect(request?.body.model).toBe('claude-sonnet-4-5')
    expect(JSON.stringify(request?.body.system)).toContain('You are terse.')
    expect(request?.body.tools[0].name).toBe('read')
    expect(request?.body.tools[0].input_schema.required).toEqual(['file_path'])
    const [, assistant, toolTurn] = request?.body.messages ?? []
    expect(assistant.content).toContainEqual(
      expect.objectContaining({ type: 'tool_use', id: 'call_1', name: 'read', input: { file_path: 'a.txt' } }),
    )
    expect(toolTurn.content[0]).toMatchObject({ type: 'tool_result', tool_use_id: 'call_1' })
    // Anthropic's own thinking switch, not DeepSeek's fields.
    expect(request?.body.thinking).toEqual({ type: 'disabled' })
    expect(request?.body).not.toHaveProperty('reasoning_effort')
  })

  it('turns a refused key into AUTH and a missing key into MISSING_CREDENTIAL naming the variable', async () => {
    await load({ providers: { anthropic: { apiKeyEnv: 'ANTHROPIC_API_KEY', baseURL: mock.url } } })
    mock.enqueue(
      reply.error(401, {
        body: { type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } },
      }),
    )
    const refused = await run({ provider: 'anthropic', model: 'claude-sonnet-4-5' })
    expect(refused.finish?.failure).toMatchObject({ code: 'AUTH', status: 401 })
    expect(refused.finish?.failure?.message).toContain('invalid x-api-key')
    expect(refused.finish?.failure?.message).toContain('ANTHROPIC_API_KEY')

    vi.stubEnv('ANTHROPIC_API_KEY', '')
    const missing = await run({ provider: 'anthropic', model: 'claude-sonnet-4-5' })
    expect(missing.finish?.failure?.code).toBe('MISSING_CREDENTIAL')
    expect(missing.finish?.failure?.message).toContain('ANTHROPIC_API_KEY')
    expect(mock.requests).toHaveLength(1)
  })
})

describe('the google route (Gemini generateContent)', () => {
  it('streams text and a function call from the SSE endpoint with the key header', async () => {
    vi.stubEnv('GEMINI_API_KEY', 'g-test')
    await load({ providers: { google: { apiKeyEnv: 'GEMINI_API_KEY', baseURL: `${mock.url}/v1beta` } } })
    mock.enqueue(geminiStream({ text: 'Reading.', toolCalls: [{ name: 'read', arguments: { file_path: 'c' } }] }))
    const result = await run({ provider: 'google', model: 'gemini-2.5-flash' })
    const blocks = result.blocks()
    expect(blocks[0]).toEqual({ type: 'text', text: 'Reading.' })
    expect(blocks[1]).toMatchObject({ type: 'tool-call', name: 'read', arguments: '{"file_path":"c"}' })
    expect(result.finish?.reason).toBe('tool-calls')
    expect(result.usage).toMatchObject({ inputTokens: 11, outputTokens: 7 })
    const [request] = mock.requests
    expect(request?.path).toBe('/v1beta/models/gemini-2.5-flash:streamGenerateContent')
    expect(request?.headers['x-goog-api-key']).toBe('g-test')
    const parts = request?.body.contents.flatMap((c: { parts: unknown[] }) => c.parts)
    expect(parts).toContainEqual(expect.objectContaining({ functionCall: expect.objectContaining({ name: 'read' }) }))
    expect(parts).toContainEqual(
      expect.objectContaining({ functionResponse: expect.objectContaining({ name: 'read' }) }),
    )
  })
})

describe('the openai route (Responses API)', () => {
  it('sends input items and maps output items back', async () => {
    vi.stubEnv('OPENAI_API_KEY', 'sk-openai-test')
    await load({ providers: { openai: { apiKeyEnv: 'OPENAI_API_KEY', baseURL: `${mock.url}/v1` } } })
    mock.enqueue(responsesStream({ text: 'Done reading.' }))
    const result = await run({ provider: 'openai', model: 'gpt-4.1' })
    expect(result.blocks()).toEqual([{ type: 'text', text: 'Done reading.' }])
    expect(result.finish).toEqual({ reason: 'stop' })
    const [request] = mock.requests
    expect(request?.path).toBe('/v1/responses')
    expect(request?.headers.authorization).toBe('Bearer sk-openai-test')
    expect(request?.body.input).toContainEqual(
      expect.objectContaining({ type: 'function_call_output', output: 'hello' }),
    )
  })
})

describe('the openrouter route (chat completions)', () => {
  it('speaks chat completions with the bearer key', async () => {
    vi.stubEnv('OPENROUTER_API_KEY', 'sk-or-test')
    await load({ providers: { openrouter: { apiKeyEnv: 'OPENROUTER_API_KEY', baseURL: `${mock.url}/api/v1` } } })
    mock.enqueue(reply.text('Routed.'))
    const result = await run({ provider: 'openrouter', model: 'anthropic/claude-sonnet-4.5' })
    expect(result.blocks()).toEqual([{ type: 'text', text: 'Routed.' }])
    expect(mock.requests[0]?.path).toBe('/api/v1/chat/completions')
    expect(mock.requests[0]?.headers.authorization).toBe('Bearer sk-or-test')
    expect(mock.requests[0]?.body.messages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'call_1' })
  })
})

describe('a launch-made openai-compatible route against a strict server', () => {
  let strict: MockLlm
  beforeEach(async () => {
    strict = await startMockLlm({ strictFields: OPENAI_CHAT_FIELDS, routes: (method) => method === 'GET' })
  })
  afterEach(() => strict.close())

  it('sends only standard chat completions fields, so the strict server answers', async () => {
    await load({ providers: {}, launch: { provider: 'openai-compatible', baseURL: `${strict.url}/v1` } })
    strict.enqueue(reply.text('Strictly fine.'))
    const result = await run({ provider: 'openai-compatible', model: 'qwen3-coder', reasoningEffort: 'high' })
    expect(result.blocks()).toEqual([{ type: 'text', text: 'Strictly fine.' }])
    const body = strict.requests[0]?.body
    expect(strict.requests[0]?.answer).toBe('completion')
    for (const field of ['thinking', 'reasoning_effort', 'max_tokens', 'store']) expect(body).not.toHaveProperty(field)
    expect(body.messages[0]).toEqual({ role: 'system', content: 'You are terse.' })
  })

  it('lists the models the server offers through /models', async () => {
    await load({ providers: {}, launch: { provider: 'openai-compatible', baseURL: `${strict.url}/v1` } })
    strict.enqueue(modelList(['qwen3-coder', 'llama-4']))
    const models = await root.llm.discoverModels('openai-compatible')
    expect(models.map((m) => m.id)).toEqual(['qwen3-coder', 'llama-4'])
    expect(strict.requests[0]).toMatchObject({ method: 'GET', path: '/v1/models' })
  })

  it('fails the load naming the field when the launch base URL is not http(s)', async () => {
    await expect(
      root.plugin(piAi, { providers: {}, launch: { provider: 'x', baseURL: 'ftp://host' } } as never),
    ).rejects.toThrow('llm-pi-ai config launch.baseURL is not an http(s) URL: "ftp://host"')
  })
})

describe('registration', () => {
  it("registers each profile's route and removes them all when the plugin is disposed", async () => {
    const fiber = root.plugin(piAi, {
      providers: { anthropic: { apiKeyEnv: 'A' }, google: { apiKeyEnv: 'G' } },
    } as unknown as piAi.PiAiConfig)
    await fiber
    expect(root.llm.listRoutes().sort()).toEqual(['anthropic', 'google', 'openai-compatible'])
    await fiber.dispose()
    expect(root.llm.listRoutes()).toEqual([])
  })

  it('without a launch route, openai-compatible reads its address from a credential at each request', async () => {
    await load({ providers: {} })
    await expect(root.llm.discoverModels('openai-compatible')).rejects.toThrow(
      'the OpenAI-compatible server has no address: set OPENAI_COMPATIBLE_BASE_URL',
    )
    vi.stubEnv('OPENAI_COMPATIBLE_BASE_URL', `${mock.url}/v1`)
    vi.stubEnv('OPENAI_COMPATIBLE_API_KEY', 'sk-compatible')
    mock.enqueue(modelList(['local-model']))
    expect((await root.llm.discoverModels('openai-compatible')).map((m) => m.id)).toEqual(['local-model'])
    expect(mock.requests[0]).toMatchObject({ method: 'GET', path: '/v1/models' })
    expect(mock.requests[0]?.headers.authorization).toBe('Bearer sk-compatible')
    vi.stubEnv('OPENAI_COMPATIBLE_BASE_URL', 'file:///etc/passwd')
    await expect(root.llm.discoverModels('openai-compatible')).rejects.toThrow(
      'OPENAI_COMPATIBLE_BASE_URL is not an http(s) URL: "file:///etc/passwd"',
    )
  })

  it('leaves openai-compatible to an adapter that already serves it', async () => {
    const other = new (class extends LlmAdapter {
      async *stream(): AsyncIterable<StreamChunk> {}
    })()
    root.llm.register(root, 'openai-compatible', other)
    await load({ providers: {} })
    expect(root.llm.adapter('openai-compatible')).toBe(other)
  })
})
