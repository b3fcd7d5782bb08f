/// <reference types="node" />
import { describe, expect, it } from 'vitest'
import { reply } from '@dsh/llm-mock'
import { composer, send, TEST_TIMEOUT_MS, useWebApp, type WebApp } from './support/web-app.ts'

// A 1x1 PNG.
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=='

/** Opens the app and types `/` in the message box, which offers the commands. */
async function typeSlash(t: WebApp) {
  await t.page.goto(t.url)
  const box = composer(t.page)
  await box.fill('/')
  return { page: t.page, box, commands: t.page.getByRole('listbox', { name: 'Commands' }) }
}

describe('composer', { timeout: TEST_TIMEOUT_MS }, () => {
  const t = useWebApp({ files: { 'src/main.ts': 'export {}\n', 'README.md': '# demo\n' } })

  it('offers / commands and models, @ files, takes a pasted image, and sends them', async () => {
    t.script(reply.text('I see a tiny image.'))
    const { page, box, commands } = await typeSlash(t)
    expect(await commands.getByRole('option').allTextContents()).toEqual([
      expect.stringContaining('/compact'),
      expect.stringContaining('/new'),
      expect.stringContaining('/model'),
      expect.stringContaining('/plan'),
    ])
    await box.press('ArrowDown')
    await box.press('ArrowDown')
    await box.press('Tab')
    expect(await box.inputValue()).toBe('/model ')
    await box.pressSequentially('vision')
    await page
      .getByRole('listbox', { name: 'Models' })
      .getByRole('option', { name: 'deepseek-v4-flash-vision-exp' })
      .waitFor()
    await box.press('Tab')
    expect(await box.inputValue()).toBe('/model deepseek-v4-flash-vision-exp')
    await box.press('Enter')
    await page.getByText('The new session will use deepseek-v4-flash-vision-exp').waitFor()

    await box.pressSequentially('What is in @mai')
    const files = page.getByRole('listbox', { name: 'Files' })
    await files.getByRole('option', { name: 'src/main.ts' }).waitFor()
    await box.press('Enter')
    expect(await box.inputValue()).toBe('What is in @src/main.ts ')

    await box.evaluate((element, data) => {
      const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0))
      const transfer = new DataTransfer()
      transfer.items.add(new File([bytes], 'dot.png', { type: 'image/png' }))
      element.dispatchEvent(new ClipboardEvent('paste', { clipboardData: transfer, bubbles: true, cancelable: true }))
    }, PNG)
    await page.getByRole('list', { name: 'Attached images' }).getByRole('img', { name: 'dot.png' }).waitFor()
    await t.screenshot('composer-attachments')
    await box.press('Enter')

    await page.getByText('I see a tiny image.').waitFor()
    await page.locator('[data-node="user"] img').waitFor()
    const request = t.mock.requests.find((r) => r.body?.tools?.length)
    expect(request?.body.model).toBe('deepseek-v4-flash-vision-exp')
    const prompt = JSON.stringify(request?.body.messages.at(-1))
    expect(prompt).toContain('What is in @src/main.ts')
    expect(prompt).toContain(PNG)

    // Commands inside the session: /model changes its model, /compact answers either way.
    await box.fill('/model deepseek-v4-pro')
    await box.press('Enter')
    await page.getByText('Model set to deepseek-v4-pro').waitFor()
    const sessionId = decodeURIComponent(page.url().split('/').pop() as string)
    const detail = await t.api<{ session: { model?: string } }>('GET', `/api/sessions/${sessionId}`)
    expect(detail.session.model).toBe('deepseek-v4-pro')
    await box.fill('/compact')
    await box.press('Enter')
    await page.getByText(/Compacted \d+ messages|Nothing to compact yet/).waitFor()
  })

  it('stays usable at 200% zoom: the sidebar becomes a drawer and nothing scrolls sideways', async () => {
    t.script(reply.text('Narrow answer. '.repeat(30)))
    const { page } = t
    await page.setViewportSize({ width: 640, height: 400 })
    await page.goto(t.url)
    const sidebar = page.getByRole('navigation', { name: 'Sessions' })
    expect(await sidebar.isVisible()).toBe(false)
    await send(page, 'Hello')
    await page.locator('[data-node="turn-end"]').waitFor()
    expect(
      await page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth),
    ).toBe(true)
    await t.screenshot('zoom-200')
    await page.getByRole('button', { name: 'Sessions' }).click()
    await sidebar.waitFor()
    await sidebar.getByRole('searchbox', { name: 'Search sessions' }).focus()
    await t.screenshot('zoom-200-drawer')
  })
})

describe('composer: workspace commands', { timeout: TEST_TIMEOUT_MS }, () => {
  const t = useWebApp({
    files: {
      '.claude/commands/review.md':
        '---\ndescription: Review a pull request\nargument-hint: <number>\n---\nReview pull request $ARGUMENTS with care.\n',
    },
  })

  it('offers the workspace commands after the built-in ones and sends /review expanded; the message shows as typed', async () => {
    t.script(reply.text('Review done.'))
    const { page, box, commands } = await typeSlash(t)
    await commands.getByRole('option', { name: /\/review <number>/ }).waitFor()
    expect(await commands.getByRole('option').allTextContents()).toEqual([
      expect.stringContaining('/compact'),
      expect.stringContaining('/new'),
      expect.stringContaining('/model'),
      expect.stringContaining('/plan'),
      expect.stringMatching(/\/review <number>.*Review a pull request \(project\)/),
    ])
    await box.pressSequentially('rev')
    await box.press('Tab')
    expect(await box.inputValue()).toBe('/review ')
    await box.pressSequentially('42')
    await box.press('Enter')
    await page.getByText('Review done.').waitFor()
    const request = t.mock.requests.find((r) => r.body?.tools?.length)
    expect(JSON.stringify(request?.body.messages.at(-1))).toContain('Review pull request 42 with care.')
    await page.locator('[data-node="user"]').getByText('/review 42').waitFor()
    await t.screenshot('composer-workspace-command')
  })
})
