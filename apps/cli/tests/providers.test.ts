import { readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { anthropicStream, type MockLlm, OPENAI_CHAT_FIELDS, reply, startMockLlm } from '@dsh/llm-mock'
import { runDsh } from '@dsh/testkit'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { useMockedHeadless } from './support/mocked-headless.ts'

// The DeepSeek mock of the helper stays the default route; each test adds the server of its own wire.
const t = useMockedHeadless()

let strict: MockLlm
let anthropic: MockLlm
beforeAll(async () => {
  strict = await startMockLlm({ strictFields: OPENAI_CHAT_FIELDS })
  anthropic = await startMockLlm({ routes: (method, route) => method === 'POST' && route === '/v1/messages' })
})
afterAll(async () => {
  await strict.close()
  await anthropic.close()
})

const headlessIn = (args: string[], env: Record<string, string | undefined> = {}) =>
  runDsh(['--profile', 'headless', ...args], { home: t.home, cwd: t.work, env: { ...t.env(), ...env } })

describe('choosing a provider in one flag', () => {
  it('--base-url alone talks to an OpenAI-compatible server with no DeepSeek-only field, which a strict server accepts', async () => {
    strict.reset()
    strict.enqueue(
      reply.toolCalls([
        { name: 'bash', arguments: { command: 'echo from qwen > out.txt', description: 'run a command' } },
      ]),
      reply.text('Wrote it.'),
    )
    const result = await headlessIn(['--base-url', `${strict.url}/v1`, '--model', 'qwen3-coder', 'make out.txt'])
    expect(result.stderr).toBe('')
    expect(result.stdout.trim()).toBe('Wrote it.')
    expect(result.code).toBe(0)
    expect(strict.requests.map((r) => r.answer)).toEqual(['completion', 'completion'])
    for (const request of strict.requests) {
      expect(request.path).toBe('/v1/chat/completions')
      expect(request.body.model).toBe('qwen3-coder')
      for (const field of ['thinking', 'reasoning_effort', 'max_tokens']) expect(request.body).not.toHaveProperty(field)
      // No key was configured for the server: none is leaked from another provider.
      expect(request.headers.authorization).toBe('Bearer no-key')
    }
    expect(await readFile(path.join(t.work, 'out.txt'), 'utf8')).toBe('from qwen\n')
    expect(t.mock.requests).toHaveLength(0)
  })

  it('the same strict server refuses what the DeepSeek route sends when DEEPSEEK_BASE_URL points at it', async () => {
    strict.reset()
    const result = await headlessIn(['say hi'], { DEEPSEEK_BASE_URL: strict.url })
    expect(result.code).toBe(1)
    expect(strict.requests[0]?.answer).toBe('unknown-field')
    expect(result.stderr).toContain('Unrecognized request argument supplied: thinking')
  })

  it('DSH_BASE_URL and DSH_MODEL do the same as the flags, with the key from OPENAI_COMPATIBLE_API_KEY', async () => {
    strict.reset()
    strict.enqueue(reply.text('Env works.'))
    const result = await headlessIn(['say hi'], {
      DSH_BASE_URL: `${strict.url}/v1`,
      DSH_MODEL: 'llama-4',
      OPENAI_COMPATIBLE_API_KEY: 'sk-local',
    })
    expect(result.stdout.trim()).toBe('Env works.')
    expect(result.code).toBe(0)
    expect(strict.requests[0]?.body.model).toBe('llama-4')
    expect(strict.requests[0]?.headers.authorization).toBe('Bearer sk-local')
  })

  it('--provider anthropic speaks Anthropic Messages with the key from ANTHROPIC_API_KEY, and the tool runs', async () => {
    anthropic.reset()
    anthropic.enqueue(
      anthropicStream({
        toolCalls: [{ name: 'bash', arguments: { command: 'echo hi > claude.txt', description: 'run a command' } }],
      }),
      anthropicStream({ text: 'Claude wrote it.' }),
    )
    const result = await headlessIn(
      ['--provider', 'anthropic', '--base-url', anthropic.url, '--model', 'claude-sonnet-4-5', 'make claude.txt'],
      { ANTHROPIC_API_KEY: 'sk-ant-e2e' },
    )
    expect(result.stdout.trim()).toBe('Claude wrote it.')
    expect(result.code).toBe(0)
    expect(anthropic.requests[0]?.headers['x-api-key']).toBe('sk-ant-e2e')
    expect(anthropic.requests[0]?.body.tools.map((tool: { name: string }) => tool.name)).toContain('bash')
    const second = anthropic.requests[1]?.body.messages.at(-1)
    expect(second.content[0]).toMatchObject({ type: 'tool_result' })
    expect(await readFile(path.join(t.work, 'claude.txt'), 'utf8')).toBe('hi\n')
  })

  it('without the key, --provider anthropic fails naming ANTHROPIC_API_KEY and sends nothing', async () => {
    anthropic.reset()
    const result = await headlessIn(['--provider', 'anthropic', '--model', 'claude-sonnet-4-5', 'hi'], {
      ANTHROPIC_API_KEY: undefined,
    })
    expect(result.code).toBe(1)
    expect(result.stderr).toContain('No API key for anthropic: set ANTHROPIC_API_KEY')
    expect(anthropic.requests).toHaveLength(0)
  })

  it('rejects a --base-url that is not http(s), naming the flag', async () => {
    const result = await headlessIn(['--base-url', 'file:///etc/passwd', 'hi'])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain('--base-url needs an http(s) URL, got "file:///etc/passwd"')
  })

  it('a provider profile in a patch adds a route of its own', async () => {
    strict.reset()
    strict.enqueue(reply.text('Patched route.'))
    const patch = path.join(t.root, 'local.yml')
    await writeFile(
      patch,
      [
        '- id: llm-pi-ai',
        '  config:',
        '    providers:',
        '      local:',
        '        api: openai-completions',
        `        baseURL: ${strict.url}/v1`,
        '        requireKey: false',
        '        compat: { supportsStore: false, supportsDeveloperRole: false, maxTokensField: max_tokens }',
        '        models: [{ id: small, contextWindow: 8192 }]',
        '',
      ].join('\n'),
    )
    const result = await headlessIn(['--patch', patch, '--provider', 'local', '--model', 'small', 'hi'])
    expect(result.stdout.trim()).toBe('Patched route.')
    expect(strict.requests[0]?.answer).toBe('completion')
  })
})
