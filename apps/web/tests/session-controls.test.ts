/// <reference types="node" />
import { existsSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it, vi } from 'vitest'
import { type MockReply, type RecordedRequest, reply } from '@dsh/llm-mock'
import { composer, TEST_TIMEOUT_MS, useWebApp, send } from './support/web-app.ts'

interface Detail {
  session: { model?: string; reasoningEffort?: string; permissionPreset: string; network?: string; plan?: boolean }
  events: Array<{ type: string; data: Record<string, unknown> }>
}

/** A reply held back until `release()`: the turn stays running meanwhile. */
function held(answer: MockReply) {
  let release!: () => void
  const gate = new Promise<void>((resolve) => (release = resolve))
  const script = async () => {
    await gate
    return answer
  }
  return { release, script }
}

/** The agent's own model requests (those with tools; titles have none). */
function agentRequests(requests: readonly RecordedRequest[]): RecordedRequest[] {
  return requests.filter((r) => r.body?.tools?.length)
}

function lastUserText(request: RecordedRequest | undefined): string {
  const messages = (request?.body?.messages ?? []) as Array<{ role: string; content: unknown }>
  return JSON.stringify(messages.filter((m) => m.role === 'user').at(-1)?.content)
}

describe('controlling a session from the browser', { timeout: TEST_TIMEOUT_MS }, () => {
  const t = useWebApp()

  const sessionIdOf = () => decodeURIComponent(t.page.url().split('#/session/')[1] ?? '')

  it("changes the session's model, effort, preset, network and plan mode from the header; they hold after a reload", async () => {
    t.script(reply.text('Hi there.'), reply.text('Still here.'))
    const page = await t.start('Hello')
    await page.locator('[data-node="turn-end"]').waitFor()
    const info = await t.api<{ models: string[]; defaultModel: string }>('GET', '/api/info')
    const other = info.models.find((m) => m !== info.defaultModel) as string
    expect(other).toBeTruthy()

    const model = page.getByRole('combobox', { name: 'Model' })
    const effort = page.getByRole('combobox', { name: 'Reasoning effort' })
    const preset = page.getByRole('combobox', { name: 'Permission preset' })
    const network = page.getByRole('combobox', { name: 'Network of sandboxed commands' })
    const plan = page.getByRole('button', { name: 'Plan mode' })
    expect(await model.inputValue()).toBe(info.defaultModel)
    await model.selectOption(other)
    await effort.selectOption('high')
    await network.selectOption('on')
    await preset.selectOption('read-only')
    await plan.click()
    await page.locator('header button[aria-pressed="true"]', { hasText: 'Plan mode' }).waitFor()
    await vi.waitFor(async () => {
      const { session } = await t.api<Detail>('GET', `/api/sessions/${sessionIdOf()}`)
      expect(session).toMatchObject({ model: other, reasoningEffort: 'high', permissionPreset: 'read-only' })
      expect(session).toMatchObject({ network: 'on', plan: true })
    })
    await t.screenshot('header-controls')

    await page.reload()
    await page.locator('header button[aria-pressed="true"]', { hasText: 'Plan mode' }).waitFor()
    expect(await model.inputValue()).toBe(other)
    expect(await effort.inputValue()).toBe('high')
    expect(await preset.inputValue()).toBe('read-only')
    expect(await network.inputValue()).toBe('on')

    // Logged server-side, and the next request uses the new model.
    const { events } = await t.api<Detail>('GET', `/api/sessions/${sessionIdOf()}`)
    expect(events.filter((e) => e.type === 'conversation/settings').at(-1)?.data).toMatchObject({
      model: other,
      reasoningEffort: 'high',
    })
    expect(events.filter((e) => e.type === 'permission/preset').at(-1)?.data).toEqual({ preset: 'read-only' })
    expect(events.filter((e) => e.type === 'permission/network').at(-1)?.data).toMatchObject({ network: 'on' })
    expect(events.filter((e) => e.type === 'plan/mode').at(-1)?.data).toMatchObject({ active: true })
    await send(page, 'And now?')
    await page.getByText('Still here.').waitFor()
    expect(agentRequests(t.mock.requests).at(-1)?.body?.model).toBe(other)
  })

  it('Enter steers the running turn; Alt+Enter queues, and queued messages can be edited or removed', async () => {
    const first = held(
      reply.toolCalls([{ name: 'bash', arguments: { command: 'echo working', description: 'run a command' } }]),
    )
    t.script(first.script, reply.text('Done, and steered.'), reply.text('Queued answer.'))
    const page = await t.start('start working')
    await page.getByText('Working', { exact: true }).waitFor()
    await vi.waitFor(() => expect(agentRequests(t.mock.requests)).toHaveLength(1))

    // The composer takes the next message once the last one was accepted (it clears then).
    const accepted = () => vi.waitFor(async () => expect(await composer(page).inputValue()).toBe(''))
    await send(page, 'please also mention the weather')
    await accepted()
    await send(page, 'queued one', 'Alt+Enter')
    await accepted()
    await composer(page).fill('queued two')
    await page.getByRole('button', { name: 'Queue message' }).click()
    const queued = page.locator('[data-testid="queued"]')
    await queued.filter({ hasText: 'queued two' }).waitFor()
    await page.getByRole('button', { name: 'Remove queued message: queued two' }).click()
    await page.getByRole('button', { name: 'Edit queued message: queued one' }).click()
    await page.getByRole('textbox', { name: 'Queued message' }).fill('queued one, edited')
    await page.getByRole('button', { name: 'Save' }).click()
    expect(await queued.allTextContents()).toEqual([expect.stringContaining('queued one, edited')])
    await t.screenshot('steer-and-queue')
    first.release()

    await page.getByText('Queued answer.').waitFor()
    await queued.waitFor({ state: 'detached' })
    const requests = agentRequests(t.mock.requests)
    expect(requests).toHaveLength(3)
    // The steer reached the second request of the first turn, after the tool's result.
    expect(lastUserText(requests[1])).toContain('please also mention the weather')
    expect(lastUserText(requests[2])).toContain('queued one, edited')
    expect(JSON.stringify(requests.map((r) => r.body?.messages))).not.toContain('queued two')
    expect(await page.locator('[data-node="user"]').allTextContents()).toEqual([
      'start working',
      'please also mention the weather',
      'queued one, edited',
    ])
    const { events } = await t.api<Detail>('GET', `/api/sessions/${sessionIdOf()}`)
    expect(events.filter((e) => e.type === 'turn/end')).toHaveLength(2)
  })

  it('/plan turns plan mode on, and a write the model then tries is blocked', async () => {
    t.script(
      reply.text('Ready.'),
      reply.toolCalls([{ name: 'write', arguments: { file_path: 'planned.txt', content: 'should not exist\n' } }]),
      reply.text('I will only plan.'),
    )
    const page = await t.start('Hello')
    await page.locator('[data-node="turn-end"]').waitFor()
    await send(page, '/plan')
    await page.locator('header button[aria-pressed="true"]', { hasText: 'Plan mode' }).waitFor()
    await send(page, 'Write planned.txt')
    await page.getByText('I will only plan.').waitFor()
    expect(existsSync(path.join(t.work, 'planned.txt'))).toBe(false)
    const { events } = await t.api<Detail>('GET', `/api/sessions/${sessionIdOf()}`)
    expect(events.find((e) => e.type === 'plan/mode')?.data).toMatchObject({ active: true })
    await send(page, '/plan off')
    await page.locator('header button[aria-pressed="false"]', { hasText: 'Plan mode' }).waitFor()
  })
})
