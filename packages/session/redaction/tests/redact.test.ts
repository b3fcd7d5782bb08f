import { Context } from '@dsh/cordis'
import { Credentials } from '@dsh/credentials'
import type { StreamChunk } from '@dsh/llm'
import { SessionStore, textMessage } from '@dsh/session'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import * as redaction from '../src/index.ts'
import { redactable, redactStream, redactText } from '../src/index.ts'

const KEY = { name: 'DEEPSEEK_API_KEY', value: 'sk-test-0123456789abcdef' }
const TOKEN = { name: 'OTHER_TOKEN', value: 'tok-9876543210' }

async function collect(chunks: StreamChunk[], secrets = [KEY, TOKEN]): Promise<StreamChunk[]> {
  async function* source() {
    yield* chunks
  }
  const out: StreamChunk[] = []
  for await (const chunk of redactStream(source(), secrets)) out.push(chunk)
  return out
}

/** Cuts `text` into deltas of `size` characters. */
const deltas = (
  text: string,
  size: number,
  type: 'text-delta' | 'reasoning-delta' = 'text-delta',
  index = 0,
): StreamChunk[] =>
  Array.from({ length: Math.ceil(text.length / size) }, (_, i) => ({
    type,
    index,
    text: text.slice(i * size, (i + 1) * size),
  }))

describe('redactText and redactable', () => {
  it('replaces every occurrence with the name, longest secret first, and leaves other text alone', () => {
    const secrets = redactable([{ name: 'SHORT', value: 'sk-test-0123' }, KEY, { name: 'TINY', value: 'abc' }], 8)
    expect(secrets.map((s) => s.name)).toEqual(['DEEPSEEK_API_KEY', 'SHORT'])
    expect(redactText(`a ${KEY.value} b ${KEY.value} c sk-test-0123 abc`, secrets)).toBe(
      'a [redacted: DEEPSEEK_API_KEY] b [redacted: DEEPSEEK_API_KEY] c [redacted: SHORT] abc',
    )
    const plain = 'nothing to see'
    expect(redactText(plain, secrets)).toBe(plain)
  })
})

describe('redactStream', () => {
  it('redacts a secret split across text deltas, holding back only what could start one', async () => {
    const text = `The key is ${KEY.value}, and the token ${TOKEN.value}. Done.`
    for (const size of [1, 2, 3, 5, 7, 64]) {
      const out = await collect([...deltas(text, size), { type: 'finish', reason: 'stop' }])
      const shown = out.filter((c) => c.type === 'text-delta').map((c) => (c as { text: string }).text)
      expect(shown.join(''), `deltas of ${size}`).toBe(
        'The key is [redacted: DEEPSEEK_API_KEY], and the token [redacted: OTHER_TOKEN]. Done.',
      )
      // No delta ever carries a piece of the key: its start is held back until the rest shows it is one.
      expect(shown.join('|')).not.toMatch(/sk-t|tok-9/)
      expect(out.at(-1)).toEqual({ type: 'finish', reason: 'stop' })
    }
  })

  it('lets a held tail go before another run, usage or the finish, keeping the order', async () => {
    const out = await collect([
      { type: 'reasoning-delta', index: 0, text: 'think sk-te' },
      { type: 'text-delta', index: 1, text: 'answer' },
      { type: 'usage', usage: { inputTokens: 1, outputTokens: 1 } },
      { type: 'finish', reason: 'stop' },
    ])
    expect(out).toEqual([
      { type: 'reasoning-delta', index: 0, text: 'think ' },
      { type: 'reasoning-delta', index: 0, text: 'sk-te' },
      { type: 'text-delta', index: 1, text: 'answer' },
      { type: 'usage', usage: { inputTokens: 1, outputTokens: 1 } },
      { type: 'finish', reason: 'stop' },
    ])
  })

  it('redacts tool-call arguments, keeping the call id and name on its first delta', async () => {
    const args = JSON.stringify({ command: `echo ${KEY.value}` })
    const pieces = Array.from({ length: Math.ceil(args.length / 4) }, (_, i) => args.slice(i * 4, (i + 1) * 4))
    const out = await collect([
      { type: 'tool-call-delta', index: 0, id: 'call_1', name: 'bash', argumentsDelta: '' },
      ...pieces.map((argumentsDelta) => ({ type: 'tool-call-delta' as const, index: 0, argumentsDelta })),
      { type: 'finish', reason: 'tool-calls' },
    ])
    const calls = out.filter((c) => c.type === 'tool-call-delta') as Extract<StreamChunk, { type: 'tool-call-delta' }>[]
    expect(calls[0]).toMatchObject({ id: 'call_1', name: 'bash' })
    expect(calls.slice(1).every((c) => c.id === undefined && c.name === undefined)).toBe(true)
    expect(JSON.parse(calls.map((c) => c.argumentsDelta).join(''))).toEqual({
      command: 'echo [redacted: DEEPSEEK_API_KEY]',
    })
  })
})

describe('the redaction plugin', () => {
  let root: Context
  let dir: string
  afterEach(async () => {
    await root?.fiber.dispose()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it('redacts what enters a session (appends and seeds) with the loaded credentials, and stops when disposed', async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-redaction-'))
    const file = path.join(dir, '.credentials.yaml')
    writeFileSync(file, `version: 1\nrefs: { DEEPSEEK_API_KEY: ${KEY.value}, SHORT: abc1234 }\n`, { mode: 0o600 })
    root = new Context()
    await root.plugin(SessionStore)
    await root.plugin(Credentials, { file, envFile: path.join(dir, '.env') })
    const fiber = root.plugin(redaction, { minLength: 8, env: [] })
    await fiber
    const session = root.sessions.create({ cwd: '/w' })
    const event = session.append('user/message', {
      message: textMessage('user', `use ${KEY.value} and abc1234`, { kind: 'user' }),
    })
    expect(JSON.stringify(event)).not.toContain(KEY.value)
    expect(session.deriveMessages()[0]?.content).toEqual([
      { type: 'text', text: 'use [redacted: DEEPSEEK_API_KEY] and abc1234' },
    ])
    // A seed (a resume of a log written before) is redacted too.
    const stored = [
      { seq: 0, time: 1, type: 'turn/start', data: { turn: 1 } },
      { ...event, seq: 1, data: { message: textMessage('user', KEY.value, { kind: 'user' }) } },
    ]
    const resumed = root.sessions.create({
      cwd: '/w',
      seed: JSON.parse(JSON.stringify(stored)),
      seedStored: true,
      adoptSeed: true,
    })
    expect(JSON.stringify(resumed.events)).not.toContain(KEY.value)
    await fiber.dispose()
    const after = root.sessions
      .create({ cwd: '/w' })
      .append('user/message', { message: textMessage('user', KEY.value, { kind: 'user' }) })
    expect(JSON.stringify(after)).toContain(KEY.value)
  })
})
