import { request as httpRequest } from 'node:http'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { type MockLlm, reply, startMockLlm } from '../src/index.ts'

let mock: MockLlm

beforeEach(async () => {
  mock = await startMockLlm()
})

afterEach(async () => {
  await mock.close()
})

const body = { model: 'deepseek-v4-flash', messages: [{ role: 'user', content: 'hi' }], stream: true }

async function post(path = '/chat/completions', payload: unknown = body, signal?: AbortSignal) {
  return fetch(`${mock.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test' },
    body: JSON.stringify(payload),
    signal,
  })
}

/** Splits an SSE text into its data payloads and counts the comment lines. */
function parseSse(text: string) {
  const data: string[] = []
  let comments = 0
  for (const line of text.split('\n')) {
    if (line.startsWith('data: ')) data.push(line.slice(6))
    else if (line.startsWith(':')) comments++
  }
  return { data, comments }
}

function deltas(data: string[]) {
  return data
    .filter((d) => d !== '[DONE]')
    .map((d) => JSON.parse(d) as { choices: Array<{ delta: any; finish_reason: string | null }>; usage: any })
}

describe('completion replies', () => {
  it('streams reasoning, content, finish, usage and [DONE] with keep-alive comments', async () => {
    mock.enqueue(
      reply.text('Hello there, friend.', {
        reasoning: 'The user greets me.',
        usage: { promptCacheHitTokens: 30, promptCacheMissTokens: 12, completionTokens: 9, reasoningTokens: 5 },
      }),
    )
    const res = await post()
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/text\/event-stream/)
    const { data, comments } = parseSse(await res.text())
    expect(comments).toBeGreaterThan(0)
    expect(data.at(-1)).toBe('[DONE]')
    const chunks = deltas(data)
    expect(chunks[0]?.choices[0]?.delta).toEqual({ role: 'assistant', content: null, reasoning_content: '' })
    const reasoning = chunks.flatMap((c) =>
      c.choices[0]?.delta.reasoning_content ? [c.choices[0].delta.reasoning_content] : [],
    )
    const content = chunks.flatMap((c) => (c.choices[0]?.delta.content ? [c.choices[0].delta.content] : []))
    expect(reasoning.length).toBeGreaterThan(1)
    expect(reasoning.join('')).toBe('The user greets me.')
    expect(content.join('')).toBe('Hello there, friend.')
    const finish = chunks.find((c) => c.choices[0]?.finish_reason)
    expect(finish?.choices[0]?.finish_reason).toBe('stop')
    const usage = chunks.at(-1)
    expect(usage?.choices).toEqual([])
    expect(usage?.usage).toMatchObject({
      prompt_tokens: 42,
      prompt_cache_hit_tokens: 30,
      prompt_cache_miss_tokens: 12,
      completion_tokens: 9,
      completion_tokens_details: { reasoning_tokens: 5 },
    })
    expect(chunks.every((c) => (c as unknown as { model: string }).model === 'deepseek-v4-flash')).toBe(true)
  })

  it('splits tool call arguments into fragments carrying id and name only first', async () => {
    mock.enqueue(
      reply.toolCalls([
        { name: 'read_file', arguments: { path: 'src/index.ts' } },
        { name: 'bash', arguments: '{"command":"ls -la"}', id: 'call_fixed' },
      ]),
    )
    const chunks = deltas(parseSse(await (await post()).text()).data)
    const fragments = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? [])
    const first = fragments.filter((f: any) => f.index === 0)
    const second = fragments.filter((f: any) => f.index === 1)
    expect(first.length).toBeGreaterThan(2)
    expect(first[0]).toMatchObject({ index: 0, type: 'function', function: { name: 'read_file' } })
    expect(first[0].id).toMatch(/^call_/)
    expect(first.slice(1).every((f: any) => f.id === undefined && f.function.name === undefined)).toBe(true)
    expect(first.map((f: any) => f.function.arguments).join('')).toBe('{"path":"src/index.ts"}')
    expect(second[0].id).toBe('call_fixed')
    expect(second.map((f: any) => f.function.arguments).join('')).toBe('{"command":"ls -la"}')
    expect(chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0]?.finish_reason).toBe('tool_calls')
  })

  it('records each request and also serves /v1/chat/completions', async () => {
    mock.enqueue(reply.text('a'), reply.text('b'))
    await (await post()).text()
    await (await post('/v1/chat/completions', { ...body, model: 'other' })).text()
    expect(mock.requests.map((r) => [r.seq, r.method, r.path, r.answer])).toEqual([
      [1, 'POST', '/chat/completions', 'completion'],
      [2, 'POST', '/v1/chat/completions', 'completion'],
    ])
    expect(mock.requests[0]?.headers.authorization).toBe('Bearer sk-test')
    expect(mock.requests[1]?.body.model).toBe('other')
    expect(mock.pending).toBe(0)
  })

  it('answers from a function script', async () => {
    mock.enqueue((req) => reply.text(`you said ${req.body.messages[0].content}`, { chunkSize: 100 }))
    const chunks = deltas(parseSse(await (await post()).text()).data)
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('you said hi')
  })

  it('uses the fallback when the queue is empty', async () => {
    mock.setFallback(reply.text('again', { keepAlive: false }))
    for (let i = 0; i < 2; i++) {
      const { data, comments } = parseSse(await (await post()).text())
      expect(comments).toBe(0)
      expect(data.at(-1)).toBe('[DONE]')
    }
  })
})

describe('failures', () => {
  it('sends HTTP errors with a JSON body and Retry-After', async () => {
    mock.enqueue(
      reply.error(429, { retryAfter: 3 }),
      reply.error(400, { message: 'too long', body: undefined }),
      reply.error(502, { body: 'Bad Gateway' }),
    )
    const limited = await post()
    expect(limited.status).toBe(429)
    expect(limited.headers.get('retry-after')).toBe('3')
    expect(((await limited.json()) as any).error.message).toMatch(/Rate limit/)
    expect(((await (await post()).json()) as any).error).toMatchObject({
      message: 'too long',
      type: 'invalid_request_error',
    })
    const gateway = await post()
    expect(gateway.status).toBe(502)
    expect(await gateway.text()).toBe('Bad Gateway')
  })

  it('answers 500 naming the request when the script ran out', async () => {
    const res = await post()
    expect(res.status).toBe(500)
    expect(((await res.json()) as any).error.message).toMatch(/script ran out: request #1 \(POST \/chat\/completions\)/)
    expect(mock.requests[0]?.answer).toBe('unscripted')
  })

  it('answers 404 for other paths', async () => {
    const res = await post('/completions')
    expect(res.status).toBe(404)
    expect(mock.requests[0]?.answer).toBe('not-found')
  })

  it('cuts the stream after N data events by destroying the socket', async () => {
    mock.enqueue(reply.cut(3))
    const res = await post()
    await expect(res.text()).rejects.toThrow()
  })

  it('stalls until the client aborts', async () => {
    mock.enqueue(reply.stall(2))
    const controller = new AbortController()
    const res = await post('/chat/completions', body, controller.signal)
    const reader = res.body!.getReader()
    const first = await reader.read()
    expect(new TextDecoder().decode(first.value)).toContain(': keep-alive')
    controller.abort()
    await expect(reader.read()).rejects.toThrow()
  })

  it('writes raw lines as given', async () => {
    mock.enqueue(reply.raw(['data: {not json', ': note', 'data: [DONE]']))
    const text = await (await post()).text()
    expect(text).toBe('data: {not json\n\n: note\ndata: [DONE]\n\n')
  })
})

describe('connections', () => {
  it('counts open sockets and closes stalled ones on close()', async () => {
    mock.enqueue(reply.stall(0))
    const done = new Promise<string>((resolve) => {
      const req = httpRequest(
        `${mock.url}/chat/completions`,
        { method: 'POST', headers: { 'content-type': 'application/json' } },
        (res) => {
          res.on('data', () => {})
          res.on('close', () => resolve('closed'))
        },
      )
      req.on('error', () => resolve('closed'))
      req.end(JSON.stringify(body))
    })
    await mock.waitForRequests(1)
    expect(mock.openConnections).toBe(1)
    await mock.close()
    expect(await done).toBe('closed')
    expect(mock.openConnections).toBe(0)
  })
})
