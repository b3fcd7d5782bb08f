/// <reference types="node" />
import { describe, expect, it } from 'vitest'
import { reply } from '@dsh/llm-mock'
import { TEST_TIMEOUT_MS, useWebApp } from './support/web-app.ts'

describe("a session's background activity", { timeout: TEST_TIMEOUT_MS }, () => {
  const t = useWebApp()

  it("opens the header's Activity popover on a running background job and shows its output, the key redacted", async () => {
    // The job prints the server's key (DEEPSEEK_API_KEY) without spelling it in its command, then keeps running.
    const command = "printf '%s%s\\n' sk-test- key; echo popover-marker; sleep 60"
    t.script(
      reply.toolCalls([
        { name: 'bash', arguments: { description: 'Tail the server log', command, run_in_background: true } },
      ]),
      reply.text('The watcher runs in the background.'),
    )
    const page = await t.start('Start the watcher')
    await page.getByText('The watcher runs in the background.').waitFor()

    const button = page.getByRole('button', { name: /^Activity/ })
    await button.click()
    const popover = page.getByRole('dialog', { name: 'Background activity' })
    const job = popover.getByRole('article', { name: 'Tail the server log' })
    await job.getByText('popover-marker').waitFor()
    expect(await job.locator('pre').textContent()).toBe('[redacted: DEEPSEEK_API_KEY]\npopover-marker\n')
    expect(await job.textContent()).toContain('running')
    expect(await popover.textContent()).not.toContain('sk-test-key')
    expect(await button.textContent()).toContain('Activity · 1')
    await t.screenshot('activity-popover')

    await page.keyboard.press('Escape')
    await popover.waitFor({ state: 'detached' })
    expect(await button.evaluate((el) => el === document.activeElement)).toBe(true)
  })
})
