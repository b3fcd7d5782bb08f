/// <reference types="node" />
import { existsSync } from 'node:fs'
import { readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { reply } from '@dsh/llm-mock'
import { TEST_TIMEOUT_MS, useWebApp, send } from './support/web-app.ts'

describe('message actions', { timeout: TEST_TIMEOUT_MS }, () => {
  const t = useWebApp({ files: { 'notes.txt': 'alpha\n' } })

  /** Two turns: the first edits notes.txt and writes made.txt, the second only talks. */
  async function twoTurns() {
    t.script(
      reply.toolCalls([{ name: 'read', arguments: { file_path: 'notes.txt' } }]),
      reply.toolCalls([
        { name: 'edit', arguments: { file_path: 'notes.txt', old_string: 'alpha', new_string: 'ALPHA' } },
      ]),
      reply.toolCalls([{ name: 'write', arguments: { file_path: 'made.txt', content: 'made by dsh\n' } }]),
      reply.text('Edited the notes.'),
      reply.text('You are welcome.'),
    )
    const page = await t.start('Edit the notes')
    await page.getByText('Edited the notes.').waitFor()
    await page.locator('[data-node="turn-end"]').waitFor()
    await send(page, 'Thanks')
    await page.getByText('You are welcome.').waitFor()
    await page.locator('[data-node="turn-end"]').nth(1).waitFor()
    expect(await readFile(path.join(t.work, 'notes.txt'), 'utf8')).toBe('ALPHA\n')
    return page.url()
  }

  it('copies a message, forks from it, and exports the session as Markdown and JSONL', async () => {
    const original = await twoTurns()
    const { page } = t
    await t.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: t.url })
    const reply1 = page.locator('[data-node="assistant-text"]', { hasText: 'Edited the notes.' })
    await reply1.hover()
    await reply1.getByRole('button', { name: 'Copy message' }).click()
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe('Edited the notes.')

    const markdown = page.waitForEvent('download')
    await page.getByRole('button', { name: 'Export as Markdown' }).click()
    const md = await readFile((await (await markdown).path()) as string, 'utf8')
    expect(md).toContain('## User\n\nEdit the notes\n')
    expect(md).toContain('### Tool call: edit')
    expect(md).toContain('## Assistant\n\nEdited the notes.\n')
    expect(md.indexOf('Thanks')).toBeGreaterThan(md.indexOf('Edited the notes.'))
    const jsonl = page.waitForEvent('download')
    await page.getByRole('button', { name: 'Export as JSONL' }).click()
    const download = await jsonl
    expect(download.suggestedFilename()).toMatch(/\.jsonl$/)
    const lines = (await readFile((await download.path()) as string, 'utf8')).trim().split('\n')
    const events = lines.map((line) => JSON.parse(line) as { seq: number; type: string })
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i))
    expect(events.filter((e) => e.type === 'user/message')).toHaveLength(2)
    expect(events.filter((e) => e.type === 'turn/end')).toHaveLength(2)

    await reply1.hover()
    await reply1.getByRole('button', { name: 'Fork from here' }).click()
    await page.waitForURL((url) => url.href !== original && url.hash.startsWith('#/session/'))
    await page.getByText('Edited the notes.').waitFor()
    expect(await page.locator('[data-node="user"]').allTextContents()).toEqual(['Edit the notes'])
    await t.screenshot('fork-from-message')
  })

  it('rewinds to before a message: lists the file changes first, holds back conflicts until confirmed, then restores', async () => {
    const original = await twoTurns()
    const { page } = t
    // Changed outside dsh since the snapshot: a conflict.
    await writeFile(path.join(t.work, 'notes.txt'), 'ALPHA\nedited by hand\n')
    const prompt = page.locator('[data-node="user"]', { hasText: 'Edit the notes' })
    await prompt.hover()
    await prompt.getByRole('button', { name: 'Rewind to before this message' }).click()
    const dialog = page.getByRole('dialog', { name: 'Rewind to before this message' })
    const changes = dialog.getByRole('list', { name: 'File changes' })
    await changes.waitFor()
    expect((await changes.getByRole('listitem').allTextContents()).sort()).toEqual([
      'remove made.txt (added since)',
      'restore notes.txt (modified since) changed outside dsh',
    ])
    await dialog
      .getByRole('alert')
      .getByText(/notes\.txt/)
      .waitFor()
    const restore = dialog.getByRole('button', { name: 'Rewind and restore files' })
    expect(await restore.isDisabled()).toBe(true)
    await t.screenshot('rewind-dry-run')
    // Nothing was written by the dry run.
    expect(await readFile(path.join(t.work, 'notes.txt'), 'utf8')).toBe('ALPHA\nedited by hand\n')
    expect(existsSync(path.join(t.work, 'made.txt'))).toBe(true)

    await dialog.getByRole('checkbox', { name: /Overwrite/ }).check()
    await restore.click()
    await page.waitForURL((url) => url.href !== original && url.hash.startsWith('#/session/'))
    await dialog.waitFor({ state: 'detached' })
    expect(await readFile(path.join(t.work, 'notes.txt'), 'utf8')).toBe('alpha\n')
    expect(existsSync(path.join(t.work, 'made.txt'))).toBe(false)
    // The new session holds nothing from that message on.
    await page.getByText('Opening the session…').waitFor({ state: 'detached' })
    expect(await page.locator('[data-node="user"]').count()).toBe(0)
  })
})
