/// <reference types="node" />
import { describe, expect, it } from 'vitest'
import { reply } from '@dsh/llm-mock'
import { composer, TEST_TIMEOUT_MS, useWebApp } from './support/web-app.ts'

describe('sessions sidebar', { timeout: TEST_TIMEOUT_MS }, () => {
  const t = useWebApp()

  it('searches past sessions and reopens one from its log; renames, forks and deletes', async () => {
    t.script(reply.text('Apples are red.'), reply.text('Bananas are yellow.'))
    const { page } = t
    await page.goto(t.url)
    await composer(page).fill('Tell me about apples')
    await composer(page).press('Enter')
    await page.getByText('Apples are red.').waitFor()
    const appleUrl = page.url()

    await page.getByRole('link', { name: 'New session', exact: true }).click()
    await page.waitForURL((url) => !url.hash.startsWith('#/session/'))
    await composer(page).fill('Tell me about bananas')
    await composer(page).press('Enter')
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

  it('opens a session straight from its URL, highlights its code once highlight.js loads, and says when a URL names no session', async () => {
    t.script(reply.text('Here:\n\n```ts\nconst answer = 42\n```\n'))
    const { page } = t
    await page.goto(t.url)
    await composer(page).fill('Show me code')
    await composer(page).press('Enter')
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
