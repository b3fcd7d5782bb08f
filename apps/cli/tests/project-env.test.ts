// ./.env of the launch directory as a credential source: below the environment, above the home .env,
// redacted like any other secret, and unable to redirect where the user's key is sent.
import { mkdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { reply, startMockLlm } from '@dsh/llm-mock'
import { describe, expect, it } from 'vitest'
import { toolTexts, useMockedHeadless } from './support/mocked-headless.ts'

const t = useMockedHeadless()
const PROJECT_KEY = 'sk-from-the-project-dotenv-4711'

describe("the launch directory's .env", () => {
  it('supplies the key when the environment has none, and the key read from it is redacted', async () => {
    writeFileSync(path.join(t.work, '.env'), `DEEPSEEK_API_KEY=${PROJECT_KEY}\n`)
    t.mock.enqueue(
      reply.toolCalls([
        {
          name: 'bash',
          arguments: { command: 'cat .env; env', description: 'Show the .env file and the environment' },
        },
      ]),
      reply.text('Done.'),
    )
    const result = await t.headless(['show the env file'], { DEEPSEEK_API_KEY: undefined })
    expect(result.code, result.stderr).toBe(0)
    expect(t.mock.requests[0]?.headers.authorization).toBe(`Bearer ${PROJECT_KEY}`)
    const shown = toolTexts(t.mock.requests[1])[0]
    expect(shown).toContain('DEEPSEEK_API_KEY=[redacted: DEEPSEEK_API_KEY]')
    // The file's values never enter dsh's environment, so the child's environment does not carry the key.
    expect(shown?.match(/DEEPSEEK_API_KEY=/g)).toHaveLength(1)
    expect(JSON.stringify(t.mock.requests[1]?.body)).not.toContain(PROJECT_KEY)
  })

  it('ranks below the environment and above the home .env', async () => {
    writeFileSync(path.join(t.work, '.env'), `DEEPSEEK_API_KEY=${PROJECT_KEY}\n`)
    mkdirSync(t.home, { recursive: true })
    writeFileSync(path.join(t.home, '.env'), 'DEEPSEEK_API_KEY=sk-from-the-home-dotenv\n')
    t.mock.enqueue(reply.text('one'), reply.text('two'))
    expect((await t.headless(['one'])).code).toBe(0)
    expect((await t.headless(['two'], { DEEPSEEK_API_KEY: undefined })).code).toBe(0)
    expect(t.mock.requests.map((r) => r.headers.authorization)).toEqual(['Bearer sk-test-key', `Bearer ${PROJECT_KEY}`])
  })

  it("cannot send the user's key elsewhere: a base URL in it is ignored", async () => {
    const evil = await startMockLlm()
    try {
      evil.enqueue(reply.text('captured'))
      writeFileSync(path.join(t.work, '.env'), `DEEPSEEK_BASE_URL=${evil.url}\n`)
      // The trusted home .env names the real endpoint; the environment holds the key but no base URL.
      mkdirSync(t.home, { recursive: true })
      writeFileSync(path.join(t.home, '.env'), `DEEPSEEK_BASE_URL=${t.mock.url}\n`)
      t.mock.enqueue(reply.text('Hello.'))
      const result = await t.headless(['Say hello.'], { DEEPSEEK_BASE_URL: undefined })
      expect(result.code, result.stderr).toBe(0)
      expect(result.stdout).toBe('Hello.\n')
      expect(evil.requests).toHaveLength(0)
      expect(t.mock.requests[0]?.headers.authorization).toBe('Bearer sk-test-key')
    } finally {
      await evil.close()
    }
  })

  it('cannot point the saved OpenAI-compatible server elsewhere: its address in ./.env is ignored', async () => {
    const [evil, server] = [await startMockLlm(), await startMockLlm()]
    try {
      evil.enqueue(reply.text('captured'))
      server.enqueue(reply.text('From the saved server.'))
      writeFileSync(path.join(t.work, '.env'), `OPENAI_COMPATIBLE_BASE_URL=${evil.url}\n`)
      // Where the web settings store them: the home's credentials document.
      mkdirSync(t.home, { recursive: true })
      writeFileSync(
        path.join(t.home, '.credentials.yaml'),
        `version: 1\nrefs:\n  OPENAI_COMPATIBLE_BASE_URL: ${server.url}\n  OPENAI_COMPATIBLE_API_KEY: sk-saved\n`,
        { mode: 0o600 },
      )
      const result = await t.headless(['--provider', 'openai-compatible', '--model', 'local', 'Say hello.'])
      expect(result.code, result.stderr).toBe(0)
      expect(result.stdout).toBe('From the saved server.\n')
      expect(evil.requests).toHaveLength(0)
      expect(server.requests[0]?.headers.authorization).toBe('Bearer sk-saved')
    } finally {
      await evil.close()
      await server.close()
    }
  })
})
