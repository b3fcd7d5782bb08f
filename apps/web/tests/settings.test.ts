/// <reference types="node" />
import { readFile, stat } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { reply } from '@dsh/llm-mock'
import { composer, TEST_TIMEOUT_MS, useWebApp } from './support/web-app.ts'

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
    await composer(page).fill('hello')
    await composer(page).press('Enter')
    await page.getByText('Offline it is.').waitFor()
    await page.getByTitle('Network of sandboxed commands').getByText('network off').waitFor()
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
    await composer(page).fill('Show me some code')
    await composer(page).press('Enter')
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
})
