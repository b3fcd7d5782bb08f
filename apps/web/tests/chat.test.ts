/// <reference types="node" />
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { reply } from '@dsh/llm-mock'
import { finishedEdit, composer, TEST_TIMEOUT_MS, useWebApp, send } from './support/web-app.ts'

const LONG = Array.from({ length: 60 }, (_, i) => `word${i}`).join(' ')

describe('conversation in the browser', { timeout: TEST_TIMEOUT_MS }, () => {
  const t = useWebApp({ files: { 'notes.txt': 'alpha\nbeta\ngamma\n' } })

  it('sends a prompt and shows the answer as it streams, then tokens and cost', async () => {
    // Long enough (about 5 s at one word per event) that the page is subscribed while the text still streams, even on a loaded machine.
    const answerText = `Hello from **dsh**. The answer is 42.\n\n${'Streaming keeps going for a while. '.repeat(20)}`
    t.script(
      reply.text(answerText, { delayMs: 40, reasoning: `Let me think about it. ${'Still thinking. '.repeat(10)}` }),
    )
    const { page } = t
    await page.goto(t.url)
    const input = composer(page)
    await input.fill('What is the answer?')
    await input.press('Enter')
    await page.waitForURL(/#\/session\//)
    await page.locator('[data-node="assistant-text"][aria-busy="true"]').waitFor()
    const answer = page.locator('[data-node="assistant-text"]')
    await answer.getByText('The answer is 42.').waitFor()
    expect(await answer.locator('strong').textContent()).toBe('dsh')
    await page.locator('[data-node="turn-end"]').waitFor()
    expect(await page.locator('[data-node="turn-end"]').textContent()).toMatch(/in .* out/)
    // The default model, deepseek-v4-flash, is priced: the turn's cost, the session's, and the context used.
    const turnCost = page.locator('[data-node="turn-end"]').getByText(/^\$0\.\d+$/)
    await turnCost.waitFor()
    const header = page.locator('header').filter({ hasText: 'tokens' })
    await header.getByText(/tokens · \$0\.\d+$/).waitFor()
    await header.getByText(/^0\.\d% context$/).waitFor()
    expect(await header.getByText(/tokens · /).textContent()).toContain(await turnCost.textContent())
    expect(await page.locator('[data-node="user"]').textContent()).toBe('What is the answer?')
    await page.getByRole('button', { name: /Thought/ }).click()
    await page.getByText('Let me think about it.').waitFor()
    await t.screenshot('conversation')
  })

  it('shows a tool card with the diff of an edit', async () => {
    t.script(
      reply.toolCalls([{ name: 'read', arguments: { file_path: 'notes.txt' } }]),
      reply.toolCalls([
        { name: 'edit', arguments: { file_path: 'notes.txt', old_string: 'beta', new_string: 'BETA' } },
      ]),
      reply.text('I changed beta to BETA.'),
    )
    const page = await t.start('Uppercase beta in notes.txt')
    const { diff } = await finishedEdit(page)
    expect(await diff.locator('tr[class*="del"]').allTextContents()).toEqual([expect.stringContaining('beta')])
    expect(await diff.locator('tr[class*="add"]').allTextContents()).toEqual([expect.stringContaining('BETA')])
    await page.getByText('I changed beta to BETA.').waitFor()
    expect(await readFile(path.join(t.work, 'notes.txt'), 'utf8')).toBe('alpha\nBETA\ngamma\n')
    await t.screenshot('tool-diff')
  })

  it("shows the provider's error code when the model call fails", async () => {
    t.script(reply.error(401))
    const page = await t.start('Hello?')
    const failure = page.locator('[data-node="turn-end"][data-reason="error"]').getByRole('alert')
    await failure.waitFor()
    expect(await failure.textContent()).toMatch(/^AUTHHTTP 401.*Authentication Fails/)
    await t.screenshot('provider-error')
  })

  it('stops a reply mid-stream', async () => {
    t.script(reply.text(LONG, { delayMs: 150 }))
    const page = await t.start('Write a lot')
    await page.getByText('word2', { exact: false }).waitFor()
    await page.getByRole('button', { name: 'Stop' }).click()
    await page.locator('[data-node="turn-end"][data-reason="aborted"]').waitFor()
    expect(await page.locator('[data-node="turn-end"]').textContent()).toContain('Stopped')
    expect(await page.locator('[data-node="assistant-text"]').first().textContent()).not.toContain('word59')
    await page.getByRole('button', { name: 'Stop' }).waitFor({ state: 'detached' })
  })

  it('queues a follow-up sent while a turn runs', async () => {
    t.script(reply.text(LONG, { delayMs: 120 }), reply.text('Second answer.'))
    const page = await t.start('First')
    await page.getByText('word1', { exact: false }).waitFor()
    await send(page, 'Second', 'Alt+Enter')
    await page.locator('[data-testid="queued"]', { hasText: 'Second' }).waitFor()
    await t.screenshot('queued-follow-up')
    await page.getByText('Second answer.').waitFor()
    expect(await page.locator('[data-node="user"]').allTextContents()).toEqual(['First', 'Second'])
    await page.locator('[data-testid="queued"]').waitFor({ state: 'detached' })
  })

  it('continues a turn after the page reloads mid-stream, with nothing lost or doubled', async () => {
    t.script(reply.text(LONG, { delayMs: 40 }))
    const page = await t.start('Stream for a while')
    await page.getByText('word3', { exact: false }).waitFor()
    await page.reload()
    await page.getByText('Working', { exact: true }).waitFor()
    await page.locator('[data-node="turn-end"][data-reason="completed"]').waitFor()
    expect((await page.locator('[data-node="assistant-text"]').textContent())?.trim()).toBe(LONG)
    expect(await page.locator('[data-node="user"]').count()).toBe(1)
  })

  it('resumes after the socket drops mid-stream, with nothing lost or doubled', async () => {
    t.script(reply.text(LONG, { delayMs: 40 }), reply.text('After the drop.'))
    const page = await t.start('Stream for a while')
    await page.getByText('word3', { exact: false }).waitFor()
    await page.evaluate(() => (window as unknown as { dsh: { live: { drop(): void } } }).dsh.live.drop())
    await page.locator('[data-node="turn-end"][data-reason="completed"]').waitFor()
    expect((await page.locator('[data-node="assistant-text"]').textContent())?.trim()).toBe(LONG)
    await send(page, 'Again')
    await page.getByText('After the drop.').waitFor()
    expect(await page.locator('[data-node="user"]').allTextContents()).toEqual(['Stream for a while', 'Again'])
    expect(await page.locator('[data-node="turn-end"]').count()).toBe(2)
  })

  it('shows the todo list and a subagent run that links to its own session', async () => {
    t.script(
      reply.toolCalls([
        {
          name: 'todo_write',
          arguments: {
            todos: [
              { content: 'Read the notes', status: 'completed' },
              { content: 'Ask a helper', status: 'in_progress' },
              { content: 'Report back', status: 'pending' },
            ],
          },
        },
      ]),
      reply.toolCalls([
        {
          name: 'subagent',
          arguments: { description: 'Count notes', prompt: 'Count the lines of notes.txt and answer with the number.' },
        },
      ]),
      reply.text('The helper counted 3 lines.'),
      reply.text('All done: 3 lines.'),
    )
    const page = await t.start('Plan and delegate')
    const todos = page.getByRole('region', { name: 'Todo list' })
    await todos.getByText('1/3 done').waitFor()
    expect(await todos.getByRole('listitem').allTextContents()).toEqual([
      '●Read the notes (completed)',
      '◐Ask a helper (in progress)',
      '○Report back (pending)',
    ])
    await page.getByText('All done: 3 lines.').waitFor()
    await t.screenshot('todos-and-subagent')
    const parentUrl = page.url()
    await page.locator('[data-tool="subagent"]').getByRole('link', { name: "Open the subagent's session" }).click()
    await page.waitForURL((url) => url.href !== parentUrl)
    await page.getByText('The helper counted 3 lines.').waitFor()
    await page.getByRole('link', { name: 'parent session' }).click()
    await page.waitForURL(parentUrl)
  })
})
