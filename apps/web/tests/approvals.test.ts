/// <reference types="node" />
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { reply } from '@dsh/llm-mock'
import { type AgentScript, composer, TEST_TIMEOUT_MS, useWebApp } from './support/web-app.ts'

describe('approval and question dialogs', { timeout: TEST_TIMEOUT_MS }, () => {
  const t = useWebApp({ files: { 'notes.txt': 'alpha\nbeta\ngamma\n' } })

  const read = reply.toolCalls([{ name: 'read', arguments: { file_path: 'notes.txt' } }])
  const edit = (from: string, to: string) =>
    reply.toolCalls([{ name: 'edit', arguments: { file_path: 'notes.txt', old_string: from, new_string: to } }])

  /** Under the read-only preset, asks for edits and waits for the first approval dialog. */
  async function promptUntilAsked(prompt: string, ...script: AgentScript[]) {
    await t.api('PUT', '/api/settings', { permissionPreset: 'read-only' })
    t.script(read, ...script)
    await t.page.goto(t.url)
    await composer(t.page).fill(prompt)
    await composer(t.page).press('Enter')
    const dialog = t.page.getByRole('dialog', { name: 'Allow edit?' })
    await dialog.waitFor()
    return dialog
  }

  it('asks before an edit under the read-only preset, and the edit runs once allowed', async () => {
    const dialog = await promptUntilAsked('Uppercase beta', edit('beta', 'BETA'), reply.text('Edited.'))
    const { page } = t
    expect(await dialog.textContent()).toContain('read-only')
    await t.screenshot('approval-dialog')
    // Keyboard: focus starts on "Allow once", Enter answers.
    await page.keyboard.press('Enter')
    await dialog.waitFor({ state: 'detached' })
    await page.locator('[data-tool="edit"][data-status="done"] [data-testid="diff"]').waitFor()
    await page.getByText('Edited.').waitFor()
    expect(await page.locator('[data-tool="edit"]').textContent()).toContain('allowed once')
    expect(await readFile(path.join(t.work, 'notes.txt'), 'utf8')).toBe('alpha\nBETA\ngamma\n')
  })

  it('rejects with a message that reaches the model, and the file stays as it was', async () => {
    const dialog = await promptUntilAsked(
      'Uppercase beta',
      edit('beta', 'BETA'),
      reply.text('Understood, I will not change it.'),
    )
    const { page } = t
    await dialog.getByLabel(/Message to the model/).fill('Leave notes.txt alone')
    await page.keyboard.press('Escape')
    await dialog.waitFor({ state: 'detached' })
    await page.getByText('Understood, I will not change it.').waitFor()
    expect(await page.locator('[data-tool="edit"]').getAttribute('data-status')).toBe('error')
    expect(await page.locator('[data-tool="edit"]').textContent()).toContain('rejected')
    expect(await readFile(path.join(t.work, 'notes.txt'), 'utf8')).toBe('alpha\nbeta\ngamma\n')
    const toolMessage = t.mock.requests
      .filter((r) => r.body?.tools?.length)
      .at(-1)
      ?.body.messages.at(-1)
    expect(JSON.stringify(toolMessage)).toContain('Leave notes.txt alone')
  })

  it('allows for the whole session with S: the next edit does not ask again', async () => {
    await promptUntilAsked(
      'Uppercase beta and gamma',
      edit('beta', 'BETA'),
      edit('gamma', 'GAMMA'),
      reply.text('Both edited.'),
    )
    const { page } = t
    await page.keyboard.press('s')
    await page.getByText('Both edited.').waitFor()
    expect(await page.locator('[data-tool="edit"][data-status="done"]').count()).toBe(2)
    expect(await readFile(path.join(t.work, 'notes.txt'), 'utf8')).toBe('alpha\nBETA\nGAMMA\n')
  })

  it('answers a question from the keyboard: a number picks the option, Enter sends', async () => {
    t.script(
      reply.toolCalls([
        {
          name: 'ask_user_question',
          arguments: {
            questions: [
              {
                id: 'greeting',
                question: 'Which greeting should the file use?',
                header: 'Greeting',
                options: [{ label: 'Hello', description: 'Friendly' }, { label: 'Good day' }],
              },
            ],
          },
        },
      ]),
      reply.text('Good day it is.'),
    )
    const page = await t.start('Write a greeting')
    const dialog = page.getByRole('dialog', { name: 'A question from the model' })
    await dialog.waitFor()
    expect(await dialog.textContent()).toContain('Which greeting should the file use?')
    await t.screenshot('question-dialog')
    await page.keyboard.press('2')
    expect(await dialog.getByRole('radio', { name: /Good day/ }).isChecked()).toBe(true)
    await page.keyboard.press('Enter')
    await page.getByText('Good day it is.').waitFor()
    const toolMessage = t.mock.requests
      .filter((r) => r.body?.tools?.length)
      .at(-1)
      ?.body.messages.at(-1)
    expect(JSON.stringify(toolMessage)).toContain('Selected: Good day')
  })
})
