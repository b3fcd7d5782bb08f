/// <reference types="node" />
import { readFile, stat } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { modelList, OPENAI_CHAT_FIELDS, reply, startMockLlm } from '@dsh/llm-mock'
import { TEST_TIMEOUT_MS, useWebApp, send } from './support/web-app.ts'

describe('settings page', { timeout: TEST_TIMEOUT_MS }, () => {
  const t = useWebApp()

  it('saves the key (write-only), model, effort and preset, and tests the connection', async () => {
    const { page } = t
    await page.goto(`${t.url}/#/settings`)
    await page.getByRole('heading', { name: 'Settings' }).waitFor()
    expect(await page.getByTestId('key-state').textContent()).toBe('Key set')
    await page.getByLabel('API key').fill('sk-from-the-browser')
    await page.getByLabel('Model', { exact: true }).selectOption('deepseek-v4-pro')
    await page.getByLabel('Reasoning effort').selectOption('high')
    await page.getByLabel('Permission preset').selectOption('read-only')
    await page.getByRole('button', { name: 'Save' }).click()
    await page.getByText('Settings saved').waitFor()
    expect(await page.getByLabel('API key').inputValue()).toBe('')

    const settings = await t.api<Record<string, unknown>>('GET', '/api/settings')
    expect(settings).toMatchObject({
      model: 'deepseek-v4-pro',
      reasoningEffort: 'high',
      permissionPreset: 'read-only',
      hasKey: true,
    })
    expect(JSON.stringify(settings)).not.toContain('sk-from-the-browser')
    const credentials = path.join(t.home, '.credentials.yaml')
    expect(await readFile(credentials, 'utf8')).toContain('sk-from-the-browser')
    expect((await stat(credentials)).mode & 0o777).toBe(0o600)

    t.mock.setFallback(() => reply.text('pong'))
    await page.getByRole('button', { name: 'Test connection' }).click()
    await page.getByText('Connected').waitFor()
    t.mock.setFallback(() => reply.error(401))
    await page.getByRole('button', { name: 'Test connection' }).click()
    await page.getByText(/AUTH/).waitFor()
    await t.screenshot('settings')
  })

  it('sets the network of commands for new sessions, which their header shows', async () => {
    const { page } = t
    await page.goto(`${t.url}/#/settings`)
    await page.getByRole('heading', { name: 'Settings' }).waitFor()
    await page.getByLabel('Network of commands').selectOption('off')
    await page.getByRole('button', { name: 'Save' }).click()
    await page.getByText('Settings saved').waitFor()
    expect(await t.api<Record<string, unknown>>('GET', '/api/settings')).toMatchObject({ network: 'off' })

    t.mock.setFallback(() => reply.text('Offline it is.'))
    await page.goto(t.url)
    await send(page, 'hello')
    await page.getByText('Offline it is.').waitFor()
    const network = page.getByRole('combobox', { name: 'Network of sandboxed commands' })
    await network.waitFor()
    expect(await network.inputValue()).toBe('off')
    await t.screenshot('session-network-off')
  })

  it('switches to the dark theme, keeps it across reloads, and renders the conversation dark', async () => {
    t.script(reply.text('Dark mode answer with `code`.\n\n```ts\nconst x: number = 1\n```'))
    const { page } = t
    await page.goto(`${t.url}/#/settings`)
    await page.getByRole('radio', { name: 'Dark' }).check()
    await page.waitForFunction(() => document.documentElement.dataset.theme === 'dark')
    const background = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor)
    expect(await background()).toBe('rgb(17, 19, 23)')
    await page.waitForFunction(() =>
      fetch('/api/settings')
        .then((r) => r.json())
        .then((s: { theme: string }) => s.theme === 'dark'),
    )
    await t.screenshot('settings-dark')

    await page.reload()
    expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe('dark')
    await page.goto(`${t.url}/#/`)
    await send(page, 'Show me some code')
    await page.locator('[data-node="turn-end"]').waitFor()
    await page.locator('pre.md-code .hljs-keyword').first().waitFor()
    await t.screenshot('conversation-dark')

    const light = await t.context.newPage()
    await light.goto(`${t.url}/#/settings`)
    expect(await light.evaluate(() => document.documentElement.dataset.theme)).toBe('dark')
    await light.getByRole('radio', { name: 'Light' }).check()
    await light.waitForFunction(() => document.documentElement.dataset.theme === 'light')
    await light.close()
  })
  it('configures an OpenAI-compatible server: the test lists its models, and chats then go to it', async () => {
    const server = await startMockLlm({
      strictFields: OPENAI_CHAT_FIELDS,
      routes: (method, route) => method === 'GET' && route === '/v1/models',
    })
    try {
      const { page } = t
      await page.goto(`${t.url}/#/settings`)
      await page.getByRole('heading', { name: 'OpenAI-compatible server' }).waitFor()
      expect(await page.getByTestId('server-key-state').textContent()).toBe('No key')
      await page.getByLabel('Server URL').fill(`${server.url}/v1`)
      await page.getByLabel('Server key', { exact: true }).fill('sk-compatible-secret')
      server.enqueue(modelList(['qwen3-coder', 'llama-4']))
      await page.getByRole('button', { name: 'Test server connection' }).click()
      await page.getByText('Connected: 2 model(s) listed').waitFor()
      expect(server.requests[0]).toMatchObject({ method: 'GET', path: '/v1/models' })
      expect(server.requests[0]?.headers.authorization).toBe('Bearer sk-compatible-secret')
      const listed = await page
        .getByTestId('server-models')
        .locator('option')
        .evaluateAll((options) => options.map((o) => (o as HTMLOptionElement).value))
      expect(listed).toEqual(['qwen3-coder', 'llama-4'])
      expect(await page.getByLabel('Server model').inputValue()).toBe('qwen3-coder')
      await page.getByLabel('Server model').fill('llama-4')
      await page.getByRole('button', { name: 'Use this server for new sessions' }).click()
      await page.getByText('New sessions use llama-4 on the OpenAI-compatible server').waitFor()
      expect(await page.getByLabel('Server key', { exact: true }).inputValue()).toBe('')
      expect(await page.getByTestId('server-key-state').textContent()).toBe('Key set')

      const settings = await t.api<Record<string, unknown>>('GET', '/api/settings')
      expect(settings).toMatchObject({
        provider: 'openai-compatible',
        model: 'llama-4',
        compatible: { baseUrl: `${server.url}/v1`, hasKey: true, keySource: 'file' },
      })
      expect(JSON.stringify(settings)).not.toContain('sk-compatible-secret')
      expect(await readFile(path.join(t.home, 'settings.yaml'), 'utf8')).toMatch(/provider: openai-compatible/)
      expect(await readFile(path.join(t.home, '.credentials.yaml'), 'utf8')).toContain('sk-compatible-secret')

      server.setFallback(() => reply.text('Hello from the compatible server.'))
      t.mock.setFallback(() => reply.error(500, { message: 'the DeepSeek route must not be called' }))
      await page.goto(t.url)
      await send(page, 'hello')
      await page.getByText('Hello from the compatible server.').waitFor()
      const chat = server.requests.find((request) => request.method === 'POST')
      expect(chat?.body.model).toBe('llama-4')
      expect(chat?.headers.authorization).toBe('Bearer sk-compatible-secret')
      // The strict server refuses unknown fields, so the answer shows none were sent.
      expect(chat?.answer).toBe('completion')
      expect(t.mock.requests.filter((request) => request.method === 'POST')).toEqual([])
      await t.screenshot('settings-openai-compatible')
    } finally {
      await server.close()
    }
  })

  it('edits allow and deny rules: a malformed one is refused by name, a saved deny rule stops the call', async () => {
    const { page } = t
    await page.goto(`${t.url}/#/settings`)
    await page.getByRole('heading', { name: 'Allow and deny rules' }).waitFor()
    await page.getByLabel('Deny rules', { exact: true }).fill('bash(')
    await page.getByRole('button', { name: 'Save' }).click()
    await page.getByText(/denyRules: .*bash\(/).waitFor()

    await page.getByLabel('Deny rules', { exact: true }).fill('write(secret*.txt)\nbash(git push*)')
    await page.getByLabel('Allow rules', { exact: true }).fill('bash(npm test*)')
    await page.getByRole('button', { name: 'Save' }).click()
    await page.getByText('Settings saved').waitFor()
    const settings = await t.api<{ rules: unknown }>('GET', '/api/settings')
    expect(settings.rules).toEqual({
      config: { allow: [], deny: [] },
      settings: { allow: ['bash(npm test*)'], deny: ['write(secret*.txt)', 'bash(git push*)'] },
    })
    expect(await readFile(path.join(t.home, 'settings.yaml'), 'utf8')).toContain('write(secret*.txt)')
    await page.reload()
    expect(await page.getByLabel('Deny rules', { exact: true }).inputValue()).toBe(
      'write(secret*.txt)\nbash(git push*)',
    )
    await t.screenshot('settings-rules')

    t.script(
      reply.toolCalls([{ name: 'write', arguments: { file_path: 'secret-plan.txt', content: 'leak\n' } }]),
      reply.text('The write was refused.'),
    )
    await page.goto(t.url)
    await send(page, 'write the secret plan')
    await page.getByText('The write was refused.').waitFor()
    await expect(stat(path.join(t.work, 'secret-plan.txt'))).rejects.toThrow(/ENOENT/)
    const toolMessage = t.mock.requests
      .flatMap((request) => request.body?.messages ?? [])
      .find((message: { role: string }) => message.role === 'tool')
    expect(JSON.stringify(toolMessage)).toContain('matches the deny rule \\"write(secret*.txt)\\"')
  })
})
