import { Context, Service } from '@dsh/cordis'
import {
  BlockAssembler,
  type ContentBlock,
  type GenerateRequest,
  LlmRuntime,
  type Message,
  type StreamChunk,
  type ToolCallId,
} from '@dsh/llm'
import { type MockLlm, reply, startMockLlm } from '@dsh/llm-mock'
import { chatMessage, textBlock } from '@dsh/testkit'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import * as deepseek from '../src/index.ts'

let mock: MockLlm
let root: Context

beforeEach(async () => {
  mock = await startMockLlm()
  vi.stubEnv('DEEPSEEK_API_KEY', 'sk-test')
  vi.stubEnv('DEEPSEEK_BASE_URL', mock.url)
  root = new Context()
  await root.plugin(LlmRuntime)
})

afterEach(async () => {
  await root.fiber.dispose()
  await mock.close()
  vi.unstubAllEnvs()
})

async function load(config: Record<string, unknown> = {}) {
  const fiber = root.plugin(deepseek, config as unknown as deepseek.DeepSeekConfig)
  await fiber
  return fiber
}

const message = (role: Message['role'], content: ContentBlock[]) =>
  chatMessage(role, content, { provider: 'deepseek', model: 'deepseek-v4-flash' })
const text = textBlock
const callId = (id: string) => id as ToolCallId

async function run(request: Partial<GenerateRequest> = {}): Promise<StreamChunk[]> {
  const chunks: StreamChunk[] = []
  const stream = root.llm.stream({
    provider: 'deepseek',
    model: 'deepseek-v4-flash',
    messages: [message('user', [text('hi')])],
    ...request,
  })
  for await (const chunk of stream) chunks.push(chunk)
  return chunks
}

function assemble(chunks: StreamChunk[]): BlockAssembler {
  const assembler = new BlockAssembler()
  for (const chunk of chunks) assembler.push(chunk)
  return assembler
}

function finishOf(chunks: StreamChunk[]) {
  const last = chunks.at(-1)
  if (last?.type !== 'finish') throw new Error(`stream did not end with finish: ${JSON.stringify(last)}`)
  return last
}

describe('streaming replies', () => {
  it('streams text and maps usage, sending a complete DeepSeek request', async () => {
    await load()
    mock.enqueue(
      reply.text('Hello there, how can I help?', {
        usage: { promptCacheHitTokens: 100, promptCacheMissTokens: 20, completionTokens: 7, reasoningTokens: 0 },
      }),
    )
    const chunks = await run()
    const result = assemble(chunks)
    expect(result.blocks()).toEqual([{ type: 'text', text: 'Hello there, how can I help?' }])
    expect(chunks.filter((c) => c.type === 'text-delta').length).toBeGreaterThan(1)
    expect(result.usage).toEqual({ inputTokens: 20, outputTokens: 7, cacheReadTokens: 100, reasoningTokens: 0 })
    expect(chunks.slice(-2).map((c) => c.type)).toEqual(['usage', 'finish'])
    expect(finishOf(chunks).reason).toBe('stop')

    const [sent] = mock.requests
    expect(sent?.path).toBe('/chat/completions')
    expect(sent?.headers.authorization).toBe('Bearer sk-test')
    expect(sent?.headers['user-agent']).toMatch(/^dsh\/\d+\.\d+\.\d+/)
    expect(sent?.body).toEqual({
      model: 'deepseek-v4-flash',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      stream_options: { include_usage: true },
      thinking: { type: 'enabled' },
      reasoning_effort: 'high',
      max_tokens: 256000,
    })
  })

  it('derives input tokens from prompt_tokens and cached_tokens when the cache fields are absent', async () => {
    await load()
    const usage = {
      prompt_tokens: 50,
      completion_tokens: 5,
      total_tokens: 55,
      prompt_tokens_details: { cached_tokens: 30 },
    }
    mock.enqueue(
      reply.raw([
        `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'ok' }, finish_reason: 'stop' }], usage })}`,
        'data: [DONE]',
      ]),
    )
    expect(assemble(await run()).usage).toEqual({ inputTokens: 20, outputTokens: 5, cacheReadTokens: 30 })
  })

  it('splits reasoning, text and fragmented tool calls into blocks in order', async () => {
    await load()
    mock.enqueue(
      reply.toolCalls(
        [
          { name: 'read_file', arguments: { path: 'src/index.ts' } },
          { name: 'bash', arguments: { command: 'ls -la' }, id: 'call_bash' },
        ],
        {
          reasoning: 'I should look at the file first.',
          content: 'Let me check.',
          usage: { reasoningTokens: 8, completionTokens: 30 },
        },
      ),
    )
    const chunks = await run()
    expect(chunks[0]).toMatchObject({ type: 'reasoning-delta', index: 0 })
    expect(chunks.some((c) => (c.type === 'reasoning-delta' || c.type === 'text-delta') && c.text === '')).toBe(false)

    const calls = chunks.filter(
      (c): c is Extract<StreamChunk, { type: 'tool-call-delta' }> => c.type === 'tool-call-delta',
    )
    const first = calls.filter((c) => c.index === 2)
    expect(first.length).toBeGreaterThan(2)
    expect(first[0]).toMatchObject({ id: expect.stringMatching(/^call_/), name: 'read_file' })
    expect(first.slice(1).every((c) => c.id === undefined && c.name === undefined)).toBe(true)

    const result = assemble(chunks)
    expect(result.blocks()).toEqual([
      { type: 'reasoning', text: 'I should look at the file first.' },
      { type: 'text', text: 'Let me check.' },
      { type: 'tool-call', id: first[0]?.id, name: 'read_file', arguments: '{"path":"src/index.ts"}' },
      { type: 'tool-call', id: 'call_bash', name: 'bash', arguments: '{"command":"ls -la"}' },
    ])
    expect(result.usage).toMatchObject({ outputTokens: 30, reasoningTokens: 8 })
    expect(finishOf(chunks).reason).toBe('tool-calls')
  })

  it('ignores keep-alive comments between and inside events', async () => {
    await load()
    mock.enqueue(
      reply.raw(
        [
          ': keep-alive',
          '',
          `data: ${JSON.stringify({ choices: [{ index: 0, delta: { role: 'assistant', content: 'a' }, finish_reason: null }] })}`,
          ': keep-alive',
          '',
          ': keep-alive',
          `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'b' }, finish_reason: 'stop' }] })}`,
          'data: [DONE]',
        ],
        { delayMs: 1 },
      ),
      reply.text('one two three four five six seven', { chunkSize: 2 }),
    )
    expect(assemble(await run()).blocks()).toEqual([{ type: 'text', text: 'ab' }])
    expect(assemble(await run()).blocks()).toEqual([{ type: 'text', text: 'one two three four five six seven' }])
  })

  it('accepts usage on the finish chunk and a stream that ends cleanly after its finish without [DONE]', async () => {
    await load()
    mock.enqueue(
      reply.text('fine', { usageOnFinishChunk: true, usage: { promptCacheMissTokens: 4, completionTokens: 1 } }),
      reply.raw([
        `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'done' }, finish_reason: 'stop' }] })}`,
      ]),
    )
    const first = await run()
    expect(assemble(first).usage).toMatchObject({ inputTokens: 4, outputTokens: 1 })
    const second = await run()
    expect(assemble(second).blocks()).toEqual([{ type: 'text', text: 'done' }])
    expect(finishOf(second).reason).toBe('stop')
  })

  it('reports the length finish as max-tokens', async () => {
    await load()
    mock.enqueue(reply.text('cut short', { finishReason: 'length' }))
    expect(finishOf(await run()).reason).toBe('max-tokens')
  })
})

describe('request mapping', () => {
  const history = () => [
    message('system', [text('You are terse.')]),
    message('user', [text('List the files.')]),
    message('assistant', [
      { type: 'reasoning', text: 'Use ls.' },
      { type: 'tool-call', id: callId('call_1'), name: 'bash', arguments: '{"command":"ls"}' },
      { type: 'tool-call', id: callId('call_2'), name: 'bash', arguments: '{"command":"true"}' },
    ]),
    message('user', [
      { type: 'tool-result', toolCallId: callId('call_1'), content: [text('a.ts\nb.ts')] },
      { type: 'tool-result', toolCallId: callId('call_2'), content: [] },
    ]),
    message('assistant', [text('Two files.')]),
    message('user', [text('And without thinking?')]),
    message('assistant', [{ type: 'tool-call', id: callId('call_3'), name: 'bash', arguments: '{}' }]),
    message('user', [{ type: 'tool-result', toolCallId: callId('call_3'), content: [text('x')], isError: true }]),
  ]

  it('sends reasoning back, maps tool results to tool messages, and lists tools', async () => {
    await load()
    mock.enqueue(reply.text('ok'))
    await run({
      messages: history(),
      tools: [
        {
          name: 'bash',
          description: 'Run a command',
          parameters: { type: 'object', properties: { command: { type: 'string' } } },
        },
      ],
      maxTokens: 1000,
      temperature: 0.2,
    })
    const body = mock.requests[0]?.body
    expect(body.messages).toEqual([
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'List the files.' },
      {
        role: 'assistant',
        content: null,
        reasoning_content: 'Use ls.',
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'bash', arguments: '{"command":"ls"}' } },
          { id: 'call_2', type: 'function', function: { name: 'bash', arguments: '{"command":"true"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'a.ts\nb.ts' },
      { role: 'tool', tool_call_id: 'call_2', content: '(no output)' },
      { role: 'assistant', content: 'Two files.' },
      { role: 'user', content: 'And without thinking?' },
      // thinking mode: a tool-call turn always carries reasoning_content
      {
        role: 'assistant',
        content: null,
        reasoning_content: '',
        tool_calls: [{ id: 'call_3', type: 'function', function: { name: 'bash', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'call_3', content: 'x' },
    ])
    expect(body.tools).toEqual([
      {
        type: 'function',
        function: {
          name: 'bash',
          description: 'Run a command',
          parameters: { type: 'object', properties: { command: { type: 'string' } } },
        },
      },
    ])
    expect(body.max_tokens).toBe(1000)
    expect(body.temperature).toBe(0.2)
  })

  it('turns thinking off for effort off and for title requests', async () => {
    await load({ reasoningEffort: 'low' })
    mock.enqueue(reply.text('a'), reply.text('b'), reply.text('c'))
    await run()
    await run({ reasoningEffort: 'off', messages: history() })
    await run({ reasoningEffort: 'max', purpose: 'title' })
    const [low, off, title] = mock.requests.map((r) => r.body)
    expect(low).toMatchObject({ thinking: { type: 'enabled' }, reasoning_effort: 'low' })
    expect(off.thinking).toEqual({ type: 'disabled' })
    expect(off.reasoning_effort).toBeUndefined()
    // the historical reasoning still goes back; the turn without any gets none
    expect(off.messages[2].reasoning_content).toBe('Use ls.')
    expect(off.messages[7].reasoning_content).toBeUndefined()
    expect(title.thinking).toEqual({ type: 'disabled' })
    expect(title.reasoning_effort).toBeUndefined()
  })

  it('sends images as data URLs and moves tool-result images into a user message', async () => {
    await load()
    mock.enqueue(reply.text('a cat'))
    await run({
      model: 'deepseek-v4-flash-vision-exp',
      messages: [
        message('assistant', [{ type: 'tool-call', id: callId('call_s'), name: 'screenshot', arguments: '{}' }]),
        message('user', [
          {
            type: 'tool-result',
            toolCallId: callId('call_s'),
            content: [text('captured'), { type: 'image', mediaType: 'image/png', data: 'QUJD' }],
          },
          text('What is this?'),
          { type: 'image', mediaType: 'image/jpeg', data: 'REVG' },
        ]),
      ],
    })
    expect(mock.requests[0]?.body.messages.slice(1)).toEqual([
      { role: 'tool', tool_call_id: 'call_s', content: 'captured' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Images returned by tool call call_s:' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,QUJD' } },
          { type: 'text', text: 'What is this?' },
          { type: 'image_url', image_url: { url: 'data:image/jpeg;base64,REVG' } },
        ],
      },
    ])
  })
})

describe('credentials', () => {
  it('fails the request, not the load, when the key is missing, and sends nothing', async () => {
    vi.stubEnv('DEEPSEEK_API_KEY', undefined)
    await load()
    expect(root.llm.listRoutes()).toContain('deepseek')
    const finish = finishOf(await run())
    expect(finish.reason).toBe('error')
    expect(finish.failure?.code).toBe('MISSING_CREDENTIAL')
    expect(finish.failure?.message).toContain('DEEPSEEK_API_KEY')
    expect(finish.failure?.message).toContain('$DSH_HOME/.credentials.yaml')
    expect(finish.failure?.message).toContain('$DSH_HOME/.env')
    expect(mock.requests).toHaveLength(0)
  })

  it('prefers ctx.credentials over the environment, and reads the key per request', async () => {
    const stored = new Map<string, string>([['DEEPSEEK_API_KEY', 'sk-stored']])
    class Credentials extends Service {
      constructor(ctx: Context) {
        super(ctx, 'credentials')
      }
      get(key: string): string | undefined {
        return stored.get(key)
      }
    }
    await root.plugin(Credentials)
    await load()
    mock.enqueue(reply.text('a'), reply.text('b'))
    await run()
    stored.delete('DEEPSEEK_API_KEY')
    await run()
    expect(mock.requests.map((r) => r.headers.authorization)).toEqual(['Bearer sk-stored', 'Bearer sk-test'])
  })

  it('names the places the credentials service offers, and reports a credentials service that fails', async () => {
    vi.stubEnv('DEEPSEEK_API_KEY', undefined)
    let broken = false
    class Credentials extends Service {
      constructor(ctx: Context) {
        super(ctx, 'credentials')
      }
      get(): string | undefined {
        if (broken)
          throw new Error(
            '/home/u/.dsh/.credentials.yaml is readable by other users; run: chmod 600 /home/u/.dsh/.credentials.yaml',
          )
        return undefined
      }
      places(key: string): string {
        return `set ${key} in the environment, in /home/u/.dsh/.credentials.yaml, or in /home/u/.dsh/.env`
      }
    }
    await root.plugin(Credentials)
    await load()
    expect(finishOf(await run()).failure).toMatchObject({
      code: 'MISSING_CREDENTIAL',
      message:
        'No API key for DeepSeek: set DEEPSEEK_API_KEY in the environment, in /home/u/.dsh/.credentials.yaml, or in /home/u/.dsh/.env.',
    })
    broken = true
    const failed = finishOf(await run()).failure
    expect(failed?.code).toBe('INVALID_CREDENTIAL')
    expect(failed?.message).toContain('chmod 600')
    expect(mock.requests).toHaveLength(0)
  })

  it('rejects a key with a line break without sending it', async () => {
    vi.stubEnv('DEEPSEEK_API_KEY', 'sk-te\nst')
    await load()
    const finish = finishOf(await run())
    expect(finish.failure?.code).toBe('INVALID_CREDENTIAL')
    expect(finish.failure?.message).not.toContain('sk-te')
    expect(mock.requests).toHaveLength(0)
  })
})

describe('failures', () => {
  it.each([
    [reply.error(401), 'AUTH', /Authentication Fails/],
    [reply.error(403), 'AUTH', /Permission denied/],
    [reply.error(402), 'QUOTA', /Insufficient Balance/],
    [reply.error(429, { message: 'You exceeded your current quota' }), 'QUOTA', /exceeded your current quota/],
    [
      reply.error(400, {
        message: "This model's maximum context length is 1000000 tokens. Please reduce the length of the messages.",
      }),
      'CONTEXT_WINDOW_EXCEEDED',
      /maximum context length/,
    ],
    [reply.error(400, { message: 'Invalid tool schema' }), 'INVALID_REQUEST', /Invalid tool schema/],
    [reply.error(413), 'INVALID_REQUEST', /too large/],
    [reply.error(503), 'SERVER', /too busy/],
    [reply.error(500, { body: 'upstream exploded' }), 'SERVER', /upstream exploded/],
    [reply.error(404, { message: 'Model Not Exist' }), 'HTTP_404', /Model Not Exist/],
  ])('maps HTTP %# to its code with the provider message', async (answer, code, said) => {
    await load()
    mock.enqueue(answer)
    const finish = finishOf(await run())
    expect(finish.reason).toBe('error')
    expect(finish.failure).toMatchObject({ code, status: answer.status, requestId: 'mock-1' })
    expect(finish.failure?.message).toMatch(said)
    expect(finish.failure?.message).toContain(`HTTP ${answer.status}`)
  })

  it('keeps Retry-After on a rate limit, in seconds or as a date', async () => {
    await load()
    const inTenSeconds = new Date(Date.now() + 10_000).toUTCString()
    mock.enqueue(reply.error(429, { retryAfter: 2 }), reply.error(429, { retryAfter: inTenSeconds }))
    const seconds = finishOf(await run()).failure
    expect(seconds).toMatchObject({ code: 'RATE_LIMIT', status: 429, retryAfterMs: 2000 })
    const date = finishOf(await run()).failure
    expect(date?.code).toBe('RATE_LIMIT')
    expect(date?.retryAfterMs).toBeGreaterThan(0)
    expect(date?.retryAfterMs).toBeLessThanOrEqual(10_000)
  })

  it('reports a cut stream as TRANSPORT after the text it did get', async () => {
    await load()
    mock.enqueue(reply.cut(4, reply.text('one two three four five six seven eight')))
    const chunks = await run()
    expect(assemble(chunks).blocks()).toEqual([{ type: 'text', text: 'one two three ' }])
    const finish = finishOf(chunks)
    expect(finish.reason).toBe('error')
    expect(finish.failure?.code).toBe('TRANSPORT')
    expect(finish.failure?.message).toMatch(/broke mid-reply/)
  })

  it('reports a stream that ends without [DONE] or finish as TRANSPORT', async () => {
    await load()
    mock.enqueue(
      reply.raw([
        `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'half' }, finish_reason: null }] })}`,
      ]),
    )
    const finish = finishOf(await run())
    expect(finish.failure?.code).toBe('TRANSPORT')
    expect(finish.failure?.message).toMatch(/\[DONE\]/)
  })

  it('reports a reply without content or tool calls as EMPTY_RESPONSE, after its usage', async () => {
    await load()
    mock.enqueue(
      reply.empty({ usage: { promptCacheMissTokens: 10, completionTokens: 0 } }),
      reply.empty({ reasoning: 'Hmm.' }),
    )
    const chunks = await run()
    expect(chunks.map((c) => c.type)).toEqual(['usage', 'finish'])
    expect(finishOf(chunks)).toMatchObject({ reason: 'error', failure: { code: 'EMPTY_RESPONSE' } })
    expect(finishOf(await run()).failure?.code).toBe('EMPTY_RESPONSE')
  })

  it('reports a chunk that is not JSON as PROTOCOL', async () => {
    await load()
    mock.enqueue(reply.raw(['data: {"choices": [', 'data: [DONE]']))
    const finish = finishOf(await run())
    expect(finish.failure?.code).toBe('PROTOCOL')
    expect(finish.failure?.message).toContain('{"choices": [')
  })

  it('reports an error event inside the stream', async () => {
    await load()
    mock.enqueue(
      reply.raw([
        `data: ${JSON.stringify({ error: { message: 'overloaded', type: 'server_error' } })}`,
        'data: [DONE]',
      ]),
    )
    const finish = finishOf(await run())
    expect(finish.failure?.code).toBe('SERVER')
    expect(finish.failure?.message).toContain('overloaded')
  })

  it('reports a refused connection as TRANSPORT naming the address', async () => {
    const closed = await startMockLlm()
    await closed.close()
    vi.stubEnv('DEEPSEEK_BASE_URL', closed.url)
    await load()
    const finish = finishOf(await run())
    expect(finish.failure?.code).toBe('TRANSPORT')
    expect(finish.failure?.message).toContain(closed.url)
    expect(finish.failure?.message).toMatch(/ECONNREFUSED/)
  })

  it('rejects an invalid DEEPSEEK_BASE_URL per request and a bad configured baseURL at load', async () => {
    vi.stubEnv('DEEPSEEK_BASE_URL', 'not a url')
    await load()
    const finish = finishOf(await run())
    expect(finish.failure?.code).toBe('INVALID_REQUEST')
    expect(finish.failure?.message).toContain('DEEPSEEK_BASE_URL')

    const loadBad = async () => {
      await root.plugin(deepseek, { baseURL: 'ftp://example.com' } as unknown as deepseek.DeepSeekConfig)
    }
    await expect(loadBad()).rejects.toThrow('llm-deepseek config baseURL is not an http(s) URL: "ftp://example.com"')
  })

  it('times out with TIMEOUT when the stream goes quiet', async () => {
    await load({ streamIdleTimeoutMs: 200 })
    mock.enqueue(reply.stall(3, reply.text('a b c d e f g')))
    const chunks = await run()
    expect(assemble(chunks).blocks()).toEqual([{ type: 'text', text: 'a b ' }])
    expect(finishOf(chunks).failure?.code).toBe('TIMEOUT')
  })

  it('stops at once when the caller aborts mid-stream', async () => {
    await load()
    mock.enqueue(reply.stall(3, reply.text('a b c d e f g')))
    const controller = new AbortController()
    const chunks: StreamChunk[] = []
    for await (const chunk of root.llm.stream({
      provider: 'deepseek',
      model: 'deepseek-v4-flash',
      messages: [message('user', [text('hi')])],
      signal: controller.signal,
    })) {
      chunks.push(chunk)
      if (chunk.type === 'text-delta') controller.abort()
    }
    expect(finishOf(chunks)).toMatchObject({ reason: 'aborted', failure: { code: 'ABORTED' } })
    await mock.waitForConnections(0)
  })

  it('answers an already aborted request without calling out', async () => {
    await load()
    const controller = new AbortController()
    controller.abort()
    expect(finishOf(await run({ signal: controller.signal })).reason).toBe('aborted')
    expect(mock.requests).toHaveLength(0)
  })
})

describe('openai-compatible route', () => {
  it('talks to its own base URL with its own key and models', async () => {
    vi.stubEnv('DEEPSEEK_BASE_URL', 'http://127.0.0.1:9')
    await load({
      openaiCompatible: { baseURL: `${mock.url}/v1`, models: [{ id: 'qwen3-coder', contextWindow: 262144 }] },
    })
    expect(root.llm.listRoutes().sort()).toEqual(['deepseek', 'openai-compatible'])
    expect(root.llm.models('openai-compatible')).toEqual([{ id: 'qwen3-coder', contextWindow: 262144 }])
    mock.enqueue(reply.text('local answer'))
    const chunks = await run({ provider: 'openai-compatible', model: 'qwen3-coder', reasoningEffort: 'high' })
    expect(assemble(chunks).blocks()).toEqual([{ type: 'text', text: 'local answer' }])
    const [sent] = mock.requests
    expect(sent?.path).toBe('/v1/chat/completions')
    expect(sent?.headers.authorization).toBeUndefined()
    expect(sent?.body).toEqual({
      model: 'qwen3-coder',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      stream_options: { include_usage: true },
    })
  })

  it('uses its key variable and reasoning parameters when configured', async () => {
    vi.stubEnv('LOCAL_LLM_KEY', 'local-key')
    await load({
      openaiCompatible: {
        baseURL: mock.url,
        apiKeyEnv: 'LOCAL_LLM_KEY',
        reasoningParams: 'effort',
        maxTokens: 4096,
        models: [],
      },
    })
    mock.enqueue(reply.text('x'))
    await run({ provider: 'openai-compatible', model: 'any', reasoningEffort: 'low' })
    expect(mock.requests[0]?.headers.authorization).toBe('Bearer local-key')
    expect(mock.requests[0]?.body).toMatchObject({ reasoning_effort: 'low', max_tokens: 4096 })
    expect(mock.requests[0]?.body.thinking).toBeUndefined()

    vi.stubEnv('LOCAL_LLM_KEY', undefined)
    const finish = finishOf(await run({ provider: 'openai-compatible', model: 'any' }))
    expect(finish.failure?.code).toBe('MISSING_CREDENTIAL')
    expect(finish.failure?.message).toContain('LOCAL_LLM_KEY')
  })
})

describe('plugin', () => {
  it('offers the catalog and the retry policy', async () => {
    await load()
    const flash = { input: 0.14, cacheRead: 0.0028, output: 0.28 }
    expect(root.llm.models('deepseek')).toEqual([
      { id: 'deepseek-v4-flash', contextWindow: 1_000_000, price: flash },
      { id: 'deepseek-v4-pro', contextWindow: 1_000_000, price: { input: 0.435, cacheRead: 0.003625, output: 0.87 } },
      { id: 'deepseek-v4-flash-vision-exp', contextWindow: 1_000_000, images: true, price: flash },
    ])
    expect(root.llm.retryPolicy('deepseek')).toEqual({
      maxRetries: 5,
      initialDelayMs: 500,
      maxDelayMs: 10_000,
      jitterRatio: 0.1,
      retryableCodes: ['RATE_LIMIT', 'SERVER', 'TIMEOUT', 'TRANSPORT', 'EMPTY_RESPONSE'],
    })
    expect(root.llm.listRoutes()).toEqual(['deepseek'])
  })

  it('takes a price per model from config, on either route, and names a price missing a field', async () => {
    const mine = { input: 1, cacheRead: 0.1, output: 2 }
    await load({
      models: [{ id: 'deepseek-v4-flash', price: mine }, { id: 'deepseek-v4-pro' }, { id: 'my-own-model' }],
      openaiCompatible: {
        baseURL: `${mock.url}/v1`,
        models: [{ id: 'qwen3-coder', price: { input: 0.5, cacheRead: 0.05, output: 1.5 } }, { id: 'free-one' }],
      },
    })
    expect(root.llm.modelInfo('deepseek', 'deepseek-v4-flash')?.price).toEqual(mine)
    // An entry without a price keeps the published one; a model DeepSeek does not list has none.
    expect(root.llm.modelInfo('deepseek', 'deepseek-v4-pro')?.price).toEqual({
      input: 0.435,
      cacheRead: 0.003625,
      output: 0.87,
    })
    expect(root.llm.modelInfo('deepseek', 'my-own-model')?.price).toBeUndefined()
    expect(root.llm.modelInfo('openai-compatible', 'qwen3-coder')?.price).toEqual({
      input: 0.5,
      cacheRead: 0.05,
      output: 1.5,
    })
    expect(root.llm.modelInfo('openai-compatible', 'free-one')?.price).toBeUndefined()

    const loadBad = async () => {
      await root.plugin(deepseek, {
        models: [{ id: 'deepseek-v4-flash', price: { input: 1, output: 2 } }],
      } as unknown as deepseek.DeepSeekConfig)
    }
    await expect(loadBad()).rejects.toThrow(/models\[0\]\.price/)
  })

  it('prefers a configured baseURL over DEEPSEEK_BASE_URL', async () => {
    vi.stubEnv('DEEPSEEK_BASE_URL', 'http://127.0.0.1:9')
    await load({ baseURL: `${mock.url}/` })
    mock.enqueue(reply.text('fixed'))
    expect(finishOf(await run()).reason).toBe('stop')
    expect(mock.requests[0]?.path).toBe('/chat/completions')
  })

  it('reuses keep-alive connections across requests', async () => {
    await load()
    for (let i = 0; i < 6; i++) {
      mock.enqueue(reply.text(`answer ${i}`))
      expect(finishOf(await run()).reason).toBe('stop')
    }
    // undici may open a second socket when a request follows the previous
    // one within the same tick; after that the pool reuses what it has.
    expect(mock.openConnections).toBeLessThanOrEqual(2)
  })

  it('unregisters its routes and closes its connections on dispose', async () => {
    // The server would keep idle connections for ten minutes: only the client can close them now.
    await mock.close()
    mock = await startMockLlm({ keepAliveTimeoutMs: 600_000 })
    vi.stubEnv('DEEPSEEK_BASE_URL', mock.url)
    const fiber = await load({ keepAliveTimeoutMs: 600_000, openaiCompatible: { baseURL: mock.url, models: [] } })
    mock.enqueue(reply.text('a'), reply.stall(1))
    await run()
    expect(mock.openConnections).toBe(1)
    let notices = 0
    root.on('llm/routes-changed', () => notices++)

    const stalled = run({ provider: 'openai-compatible', model: 'any' })
    await mock.waitForRequests(2)
    await fiber.dispose()
    expect(root.llm.listRoutes()).toEqual([])
    expect(notices).toBeGreaterThan(0)
    expect(finishOf(await stalled)).toMatchObject({ reason: 'aborted', failure: { code: 'ABORTED' } })
    await mock.waitForConnections(0)

    const after = finishOf(await run())
    expect(after.failure?.code).toBe('UNKNOWN_ROUTE')
  })
})
