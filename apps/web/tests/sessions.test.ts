/// <reference types="node" />
import { mkdir, writeFile } from 'node:fs/promises'
import { hostname } from 'node:os'
import path from 'node:path'
import type { Page } from 'playwright-core'
import { describe, expect, it } from 'vitest'
import { reply } from '@dsh/llm-mock'
import { formatCost, formatTokens } from '../src/lib/format.ts'
import { composer, TEST_TIMEOUT_MS, useWebApp, send } from './support/web-app.ts'

/** A stored log of `turns` question-and-answer turns, as a finished run leaves it, with priced usage. */
/** Holds back the read of a session's earlier part until the returned function is called. */
async function holdBackEarlierPart(page: Page): Promise<() => void> {
  let release = () => {}
  const released = new Promise<void>((resolve) => (release = resolve))
  await page.route(/\/events\?before=/, async (route) => {
    await released
    await route.continue()
  })
  return release
}

async function storeLongSession(
  home: string,
  cwd: string,
  turns: number,
): Promise<{ id: string; tokens: number; cost: number }> {
  const id = `session-long-${turns}`
  let seq = 0
  let time = Date.UTC(2026, 10, 1)
  const line = (type: string, data: unknown) => JSON.stringify({ seq: seq++, time: (time += 1000), type, data })
  const lines = [
    JSON.stringify({ type: 'session', format: 1, id, createdAt: time, cwd }),
    line('session/title', { title: 'A long conversation', source: 'user' }),
  ]
  let tokens = 0
  let cost = 0
  for (let turn = 1; turn <= turns; turn++) {
    const usage = { inputTokens: 2000, outputTokens: 300, cacheReadTokens: 1000, reasoningTokens: 0 }
    tokens += usage.inputTokens + usage.cacheReadTokens + usage.outputTokens
    // deepseek-v4-flash's list price per million tokens: $0.14 missed, $0.0028 cached, $0.28 output.
    cost += (usage.inputTokens * 0.14 + usage.cacheReadTokens * 0.0028 + usage.outputTokens * 0.28) / 1e6
    const source = { kind: 'model', provider: 'deepseek', model: 'deepseek-v4-flash' }
    lines.push(
      line('turn/start', { turn }),
      line('user/message', {
        message: {
          id: `u${turn}`,
          role: 'user',
          content: [{ type: 'text', text: `Question ${turn}` }],
          source: { kind: 'user' },
        },
      }),
      line('request/header', { reason: 'initial', provider: 'deepseek', model: 'deepseek-v4-flash', tools: [] }),
      line('assistant/message', {
        turn,
        step: 1,
        finish: 'stop',
        usage,
        message: { id: `a${turn}`, role: 'assistant', content: [{ type: 'text', text: `Answer ${turn}` }], source },
      }),
      line('turn/end', { turn, reason: 'completed' }),
    )
  }
  await mkdir(path.join(home, 'sessions'), { recursive: true })
  await writeFile(path.join(home, 'sessions', `${id}.jsonl`), `${lines.join('\n')}\n`)
  return { id, tokens, cost }
}

describe('sessions sidebar', { timeout: TEST_TIMEOUT_MS }, () => {
  const t = useWebApp()

  it('searches past sessions and reopens one from its log; renames, forks and deletes', async () => {
    t.script(reply.text('Apples are red.'), reply.text('Bananas are yellow.'))
    const page = await t.start('Tell me about apples')
    await page.getByText('Apples are red.').waitFor()
    const appleUrl = page.url()

    await page.getByRole('link', { name: 'New session', exact: true }).click()
    await page.waitForURL((url) => !url.hash.startsWith('#/session/'))
    await send(page, 'Tell me about bananas')
    await page.getByText('Bananas are yellow.').waitFor()
    const sidebar = page.getByRole('navigation', { name: 'Sessions' })
    await sidebar.locator('li[data-session-id]').nth(1).waitFor()

    await sidebar.getByRole('searchbox', { name: 'Search sessions' }).fill('apples')
    const results = sidebar.getByRole('list', { name: 'Search results' })
    await results.waitFor()
    await page.waitForFunction(() => document.querySelectorAll('nav li[data-session-id]').length === 1)
    await t.screenshot('session-search')
    await results.getByRole('link').first().click()
    await page.waitForURL(appleUrl)
    await page.getByText('Apples are red.').waitFor()
    expect(await page.locator('[data-node="user"]').allTextContents()).toEqual(['Tell me about apples'])
    await sidebar.getByRole('searchbox', { name: 'Search sessions' }).fill('')
    await sidebar.locator('li[data-session-id]').nth(1).waitFor()

    const appleId = decodeURIComponent(appleUrl.split('/').pop() as string)
    const appleItem = sidebar.locator(`li[data-session-id="${appleId}"]`)
    await appleItem.getByRole('button', { name: /^Actions for/ }).click()
    await page.getByRole('menuitem', { name: 'Rename' }).click()
    const title = sidebar.getByRole('textbox', { name: 'Session title' })
    await title.fill('Fruit talk')
    await title.press('Enter')
    await sidebar.getByRole('link', { name: /Fruit talk/ }).waitFor()
    await page.getByRole('heading', { level: 1, name: 'Fruit talk' }).waitFor()

    await appleItem.getByRole('button', { name: 'Actions for Fruit talk' }).click()
    await page.getByRole('menuitem', { name: 'Fork' }).click()
    await page.waitForURL((url) => url.hash.startsWith('#/session/') && url.href !== appleUrl)
    await page.getByText('Apples are red.').waitFor()
    expect(await page.locator('[data-node="user"]').allTextContents()).toEqual(['Tell me about apples'])
    const forkUrl = page.url()

    await appleItem.getByRole('button', { name: 'Actions for Fruit talk' }).click()
    await page.getByRole('menuitem', { name: 'Delete' }).click()
    const confirm = page.getByRole('dialog', { name: /Delete/ })
    await confirm.getByRole('button', { name: 'Delete' }).click()
    await appleItem.waitFor({ state: 'detached' })
    expect(page.url()).toBe(forkUrl)
    await expect(t.api('GET', `/api/sessions/${appleId}`)).rejects.toThrow(/404/)
  })

  it('opens a long session at its end from the recent part of its log, then reads the rest without moving what is on screen', async () => {
    const { id, tokens, cost } = await storeLongSession(t.home, t.work, 120)
    const { page } = t
    const reads: string[] = []
    page.on('request', (request) => {
      const url = new URL(request.url())
      // The reads of its log (the activity popover's count is another route).
      if (url.pathname.startsWith('/api/sessions/') && !url.pathname.endsWith('/activity'))
        reads.push(url.pathname.replace(`/api/sessions/${id}`, '') + url.search)
    })
    // The earlier part is held back until the reader has scrolled.
    const release = await holdBackEarlierPart(page)
    await page.goto(`${t.url}/#/session/${id}`)
    await page.getByText('Answer 120').waitFor()
    // The totals and the title come from the part not yet read.
    await page.getByText(`${formatTokens(tokens)} tokens · ${formatCost(cost)}`).waitFor()
    // The last reply's 3,300 tokens of deepseek-v4-flash's 1,000,000.
    await page.getByText('0.3% context').waitFor()
    await page.getByRole('heading', { name: 'A long conversation' }).waitFor()

    const conversation = page.getByRole('region', { name: 'Conversation' })
    await conversation.evaluate((el) => el.scrollTo({ top: 0 }))
    await page.getByText('Loading earlier messages…').waitFor()
    await t.screenshot('session-loading-earlier')
    await page.getByText('Question 82', { exact: true }).evaluate((el) => el.scrollIntoView({ block: 'start' }))
    const question = page.getByText('Question 83', { exact: true })
    const top = (await question.boundingBox())?.y
    release()
    await page.getByText('Loading earlier messages…').waitFor({ state: 'detached' })
    await page.getByText('Question 80', { exact: true }).waitFor({ state: 'attached' })
    expect((await question.boundingBox())?.y).toBeCloseTo(top as number, 0)
    // The title, then five events a turn: the last 200 events are turns 81 to 120, from turn 81's start.
    expect(reads).toEqual(['?tail=200', `/events?before=${1 + 5 * 80}`])

    await conversation.evaluate((el) => el.scrollTo({ top: 0 }))
    await page.getByText('Question 1', { exact: true }).waitFor()
    expect(await page.locator('[data-node="user"]').first().textContent()).toBe('Question 1')
  })

  it('keeps the first recent message in place when the rest arrives while the reader is on the "Loading earlier messages…" row', async () => {
    const { id } = await storeLongSession(t.home, t.work, 120)
    const { page } = t
    const release = await holdBackEarlierPart(page)
    await page.goto(`${t.url}/#/session/${id}`)
    await page.getByText('Answer 120').waitFor()
    const conversation = page.getByRole('region', { name: 'Conversation' })
    await conversation.evaluate((el) => el.scrollTo({ top: 0 }))
    await page.getByText('Loading earlier messages…').waitFor()
    const question = page.getByText('Question 81', { exact: true })
    // Where it rests once the rows on screen are measured (two frames without a move).
    let top = Number.NaN
    for (let moved = true; moved; ) {
      const before = top
      await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))))
      top = (await question.boundingBox())?.y as number
      moved = top !== before
    }
    release()
    await page.getByText('Loading earlier messages…').waitFor({ state: 'detached' })
    // Still on screen, where it was, once the rows above are measured; the end of turn 80 now fills the place of the loading row.
    const drift = async () =>
      (await question.count()) === 1 ? Math.abs(((await question.boundingBox())?.y ?? Number.NaN) - top) : Number.NaN
    await expect.poll(drift, { timeout: 5_000 }).toBeLessThanOrEqual(1)
    await page.getByText('Question 80', { exact: true }).waitFor({ state: 'attached' })
  })

  it('opens a session straight from its URL, highlights its code once highlight.js loads, and says when a URL names no session', async () => {
    t.script(reply.text('Here:\n\n```ts\nconst answer = 42\n```\n'))
    const page = await t.start('Show me code')
    await page.locator('[data-node="turn-end"]').waitFor()
    const url = page.url()

    // A fresh tab: the session loads from index.html's early request, before the app script runs.
    const fresh = await t.context.newPage()
    await fresh.goto(url)
    await fresh.locator('pre.md-code .hljs-keyword').first().waitFor()
    expect(await fresh.locator('[data-node="user"]').allTextContents()).toEqual(['Show me code'])
    expect(await fresh.locator('pre.md-code code').textContent()).toBe('const answer = 42')

    await fresh.goto(`${t.url}/#/session/no-such-session`)
    await fresh.reload()
    await fresh.getByRole('alert').getByText('This session does not exist').waitFor()
    await fresh.close()
  })
})

describe('a session another dsh process has open', { timeout: TEST_TIMEOUT_MS }, () => {
  let id = ''
  // Its lease names this test's own process: alive, on this host, and not the server.
  const t = useWebApp({
    prepareHome: async (home, work) => {
      ;({ id } = await storeLongSession(home, work, 2))
      await writeFile(
        path.join(home, 'sessions', `${id}.lock`),
        JSON.stringify({ pid: process.pid, host: hostname(), since: Date.now() }),
      )
    },
  })

  it('is marked in the sidebar, reads as usual, and says who has it when a message is refused', async () => {
    const { page } = t
    await page.goto(t.url)
    const item = page.getByRole('navigation', { name: 'Sessions' }).locator(`li[data-session-id="${id}"]`)
    const marker = item.getByText('open in another dsh')
    await marker.waitFor()
    expect(await marker.getAttribute('title')).toContain(
      `dsh process ${process.pid} on ${hostname()} has this session open`,
    )
    await item.getByRole('link').click()
    await page.getByText('Answer 2').waitFor()
    await t.screenshot('session-open-elsewhere')
    await send(page, 'May I?')
    await page
      .getByText(`session ${id} is open in another dsh (process ${process.pid} on ${hostname()}`, { exact: false })
      .waitFor()
    expect(await composer(page).inputValue()).toBe('May I?')
  })
})
