import { appendFileSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { reply } from '@dsh/llm-mock'
import { describe, expect, it } from 'vitest'
import { useMockedHeadless } from './support/mocked-headless.ts'
import { readSessionLog, sessionLogText } from './support/session-log.ts'

const t = useMockedHeadless()

/** Runs one completed turn and returns the session id and its (unsealed) log path. */
async function storedSession(): Promise<{ id: string; file: string }> {
  t.mock.enqueue(reply.text('First answer.'))
  const first = await t.headless(['--json', 'first'])
  expect(first.code).toBe(0)
  const id = JSON.parse(first.stdout.split('\n')[0] as string).sessionId as string
  const sealed = path.join(t.home, 'sessions', `${id}.jsonl.zst`)
  const file = path.join(t.home, 'sessions', `${id}.jsonl`)
  if (existsSync(sealed)) {
    writeFileSync(file, await sessionLogText(t.home, id))
    rmSync(sealed)
  }
  return { id, file }
}

describe('stored sessions with bad content', () => {
  it('a corrupt line is reported with file and line, and the rest of the session resumes', async () => {
    const { id, file } = await storedSession()
    const lines = readFileSync(file, 'utf8').split('\n')
    lines[3] = '{"seq": 2, "type": "user/mess'
    writeFileSync(file, lines.join('\n'))
    t.mock.enqueue(reply.text('Second answer.'))
    const result = await t.headless(['--resume', id, 'second'])
    expect(result.stderr).toContain(`dsh: warning: ${file}:4: `)
    expect(result.code).toBe(0)
    expect(result.stdout).toBe('Second answer.\n')
  })

  it('a truncated tail is reported and dropped; the log stays well-formed', async () => {
    const { id, file } = await storedSession()
    appendFileSync(file, '{"seq": 99, "time": 1, "type": "turn/st')
    t.mock.enqueue(reply.text('Second answer.'))
    const result = await t.headless(['--resume', id, 'second'])
    expect(result.code).toBe(0)
    expect(result.stderr).toMatch(/dsh: warning: .*\.jsonl:\d+: /)
    const { events } = await readSessionLog(t.home, id)
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i))
    expect(events.at(-1)?.type).toBe('turn/end')
  })

  it('an event type no plugin declares refuses the resume and changes nothing', async () => {
    const { id, file } = await storedSession()
    appendFileSync(file, `${JSON.stringify({ seq: 50, time: 1, type: 'mystery/event', data: {} })}\n`)
    const before = readFileSync(file, 'utf8')
    const result = await t.headless(['--resume', id, 'second'])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain(`dsh: ${file}: event 50 has type "mystery/event", which no loaded plugin declares`)
    expect(readFileSync(file, 'utf8')).toBe(before)
    expect(t.mock.requests).toHaveLength(1)
  })

  it('an unknown session id is a clear error', async () => {
    const result = await t.headless(['--resume', 'session-nope', 'hello'])
    expect(result.code).toBe(1)
    expect(result.stderr).toMatch(/^dsh: no session session-nope under /)
  })
})
