import { existsSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import path from 'node:path'
import { reply } from '@dsh/llm-mock'
import { runDsh } from '@dsh/testkit'
import { describe, expect, it } from 'vitest'
import { useMockedHeadless } from './support/mocked-headless.ts'

const t = useMockedHeadless()

const sessions = (...args: string[]) => runDsh(['sessions', ...args], { home: t.home, cwd: t.work })

interface Entry {
  sessionId: string
  costUsd?: number
  preview?: string
  cwd: string
  userMessages: number
  assistantMessages: number
}

describe('dsh sessions', () => {
  it('finds past headless sessions by their words, lists, shows, exports and rebuilds the catalog', async () => {
    t.mock.enqueue(reply.text('Capybaras are the largest living rodents.'))
    const run = await t.headless(['--json', 'tell me about capybaras'])
    expect(run.code).toBe(0)
    const result = JSON.parse(run.stdout.trim().split('\n').at(-1) as string)
    t.mock.enqueue(reply.text('Volcanoes form where magma reaches the surface.'))
    expect((await t.headless(['explain volcanoes briefly'])).code).toBe(0)

    const listed = await sessions('list', '--json')
    expect(listed).toMatchObject({ code: 0, stderr: '' })
    const entries = (JSON.parse(listed.stdout) as { sessions: Entry[] }).sessions
    expect(entries.map((e) => e.preview)).toEqual(['explain volcanoes briefly', 'tell me about capybaras'])
    expect(entries[0]).toMatchObject({ cwd: t.work, userMessages: 1, assistantMessages: 1 })
    const [volcanoes, capybaras] = entries.map((e) => e.sessionId) as [string, string]
    // The same meter as the run's own result line: deepseek-v4-flash at its list price.
    expect(entries[1]).toMatchObject({ costUsd: result.costUsd, context: result.context })
    expect(result.costUsd).toBeGreaterThan(0)

    const found = await sessions('search', 'capybaras')
    expect(found.code).toBe(0)
    expect(found.stdout).toContain(capybaras)
    expect(found.stdout).not.toContain(volcanoes)
    expect(found.stdout).toContain('«capybaras»')
    expect((await sessions('search', 'magma')).stdout).toContain(volcanoes)

    const shown = await sessions('show', capybaras)
    expect(shown.code).toBe(0)
    expect(shown.stdout).toContain(`session  ${capybaras}`)
    expect(shown.stdout).toContain('tell me about capybaras')
    expect(shown.stdout).toContain('Capybaras are the largest living rodents.')
    const dollars = `$${result.costUsd.toFixed(6)}`
    expect(shown.stdout).toContain(`\ncost     ${dollars} (turn 1 ${dollars})\n`)
    const { tokens, percent } = result.context
    expect(shown.stdout).toContain(`\ncontext  ${percent}% of 1000000 tokens (${tokens} after the last reply)\n`)

    const markdown = await sessions('export', capybaras, '--format', 'markdown')
    expect(markdown.code).toBe(0)
    expect(markdown.stdout).toContain('## User\n\ntell me about capybaras')
    expect(markdown.stdout).toContain('## Assistant\n\nCapybaras are the largest living rodents.')
    const jsonl = await sessions('export', capybaras)
    expect(JSON.parse(jsonl.stdout.split('\n')[0] as string)).toMatchObject({
      type: 'session',
      id: capybaras,
      cwd: t.work,
    })

    const catalog = path.join(t.home, 'catalog.sqlite')
    await rm(catalog)
    const rebuilt = await sessions('reindex')
    expect(rebuilt.code).toBe(0)
    expect(rebuilt.stdout).toMatch(/^indexed 2 session\(s\) in \d+ ms\n$/)
    expect(existsSync(catalog)).toBe(true)
    expect((await sessions('search', 'capybaras')).stdout).toContain(capybaras)
  })

  it('builds the catalog from the logs when it does not exist yet', async () => {
    t.mock.enqueue(reply.text('Noted.'))
    expect((await t.headless(['remember the pangolin'])).code).toBe(0)
    // A headless run does not load SQLite: it leaves the catalog to the next reader.
    expect(existsSync(path.join(t.home, 'catalog.sqlite'))).toBe(false)
    const found = await sessions('search', 'pangolin', '--json')
    expect(found.code).toBe(0)
    expect(JSON.parse(found.stdout)).toEqual([
      expect.objectContaining({ preview: 'remember the pangolin', snippet: expect.stringContaining('«pangolin»') }),
    ])
  })

  it('catches up with headless runs made after the catalog was built', async () => {
    t.mock.enqueue(reply.text('Noted.'))
    expect((await t.headless(['remember the axolotl'])).code).toBe(0)
    expect((await sessions('search', 'axolotl')).stdout).toContain('«axolotl»')
    t.mock.enqueue(reply.text('Noted too.'))
    expect((await t.headless(['and the quokka'])).code).toBe(0)
    const listed = JSON.parse((await sessions('list', '--json')).stdout) as { sessions: Entry[] }
    expect(listed.sessions.map((e) => e.preview)).toEqual(['and the quokka', 'remember the axolotl'])
    expect((await sessions('search', 'quokka')).stdout).toContain('«quokka»')
  })

  it.each([
    [['bogus'], 'dsh: unknown sessions command "bogus"'],
    [['list', '--limit', 'lots'], 'dsh: sessions list: --limit needs a whole number from 1 to 1000, got "lots"'],
    [['show', 'session-nope'], 'dsh: no session session-nope under'],
    [['export', 'session-nope', '--format', 'markdown'], 'dsh: no session session-nope under'],
  ])('exits 1 naming the culprit: %j', async (args, message) => {
    const result = await sessions(...args)
    expect(result.code).toBe(1)
    expect(result.stdout).toBe('')
    expect(result.stderr).toContain(message)
  })
})
