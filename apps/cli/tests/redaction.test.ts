import { randomBytes } from 'node:crypto'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { type RecordedRequest, reply } from '@dsh/llm-mock'
import { runDsh } from '@dsh/testkit'
import { describe, expect, it } from 'vitest'
import { useMockedHeadless } from './support/mocked-headless.ts'
import { onlyStoredSession, sessionLogText } from './support/session-log.ts'

const t = useMockedHeadless()

/** A fake key in $DSH_HOME/.credentials.yaml (0600), with a second credential beside it. */
async function credentials() {
  const key = `sk-test-${randomBytes(16).toString('hex')}`
  const token = `ghp_${randomBytes(12).toString('hex')}`
  await mkdir(t.home, { recursive: true })
  await writeFile(
    path.join(t.home, '.credentials.yaml'),
    `version: 1\nrefs:\n  DEEPSEEK_API_KEY: ${key}\n  GITHUB_TOKEN: ${token}\n`,
    { mode: 0o600 },
  )
  return { key, token }
}

const hasToolResult = (request: RecordedRequest) =>
  request.body.messages.some((m: { role: string }) => m.role === 'tool')

/** Every file under `dir`, read as text (the catalog, its WAL, the logs). */
function filesUnder(dir: string): { file: string; bytes: string }[] {
  if (!existsSync(dir)) return []
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => {
      const file = path.join(entry.parentPath, entry.name)
      return { file, bytes: readFileSync(file).toString('latin1') }
    })
}

describe('credentials never reach the log, the catalog, the output or the model', () => {
  it('a key the model echoes through bash and writes in its answer is [redacted: NAME] everywhere', async () => {
    const { key, token } = await credentials()
    const half = key.length / 2
    t.mock.setFallback((request) => {
      const results = request.body.messages.filter((m: { role: string }) => m.role === 'tool').length
      // 1: the model "knows" the key and echoes it; 2: a command whose output holds it, though its text does not.
      if (results === 0)
        return reply.toolCalls([{ name: 'bash', arguments: { description: 'Run a command', command: `echo ${key}` } }])
      if (results === 1)
        return reply.toolCalls([
          {
            name: 'bash',
            arguments: {
              description: 'Run a command',
              command: `printf '%s%s\\n' ${key.slice(0, half)} ${key.slice(half)}`,
            },
          },
        ])
      // Small deltas: the key and the token arrive split across several of them.
      return reply.text(`Your key is ${key} and your token is ${token}.`, { chunkSize: 5 })
    })
    try {
      const result = await t.headless(['--json', 'show me the key'], { DEEPSEEK_API_KEY: undefined })
      expect(result.code, result.stderr).toBe(0)
      const sessionId = onlyStoredSession(t.home)

      // Shown: the --json stream (events, live deltas, the result) carries the placeholder only.
      expect(result.stdout).not.toContain(key)
      expect(result.stdout).not.toContain(token)
      const lines = result.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line))
      const final = lines.at(-1)
      expect(final.text).toBe('Your key is [redacted: DEEPSEEK_API_KEY] and your token is [redacted: GITHUB_TOKEN].')
      const text = lines.filter((l) => l.type === 'delta' && l.kind === 'text').map((l) => l.delta)
      expect(text.length).toBeGreaterThan(3)
      expect(text.join('')).toBe(final.text)
      const results = lines
        .filter((l) => l.type === 'event' && l.event.type === 'tool/result')
        .map((l) => JSON.stringify(l.event.data.message))
      expect(results).toHaveLength(2)
      for (const shown of results) expect(shown).toContain('[redacted: DEEPSEEK_API_KEY]')

      // Stored: the sealed log.
      const log = await sessionLogText(t.home, sessionId)
      expect(log).toContain('[redacted: DEEPSEEK_API_KEY]')
      expect(log).not.toContain(key)
      expect(log).not.toContain(token)

      // Sent: the tool results went back to the model redacted, and no request carried the key in its body.
      const followUps = t.mock.requests.filter(hasToolResult)
      expect(followUps).toHaveLength(2)
      const sentBack = followUps[1]?.body.messages
        .filter((m: { role: string }) => m.role === 'tool')
        .map((m: { content: string }) => m.content)
      expect(sentBack).toHaveLength(2)
      for (const content of sentBack) expect(content).toContain('[redacted: DEEPSEEK_API_KEY]')
      for (const request of t.mock.requests) expect(request.rawBody).not.toContain(key)
      // The key did authenticate the requests: it is a loaded credential, not a string dsh dropped.
      expect(t.mock.requests[0]?.headers.authorization).toBe(`Bearer ${key}`)

      // Indexed: the catalog catches up with the log (headless runs without it), and holds no copy.
      const search = await runDsh(['sessions', 'search', 'redacted'], { home: t.home, cwd: t.work })
      expect(search.code, search.stderr).toBe(0)
      expect(search.stdout).toContain(sessionId)
      expect((await runDsh(['sessions', 'search', key], { home: t.home, cwd: t.work })).stdout).not.toContain(sessionId)
      const stored = filesUnder(t.home).filter((f) => !f.file.endsWith('.credentials.yaml'))
      expect(stored.map((f) => path.basename(f.file))).toContain('catalog.sqlite')
      for (const { file, bytes } of stored) {
        expect(bytes.includes(key), file).toBe(false)
        expect(bytes.includes(token), file).toBe(false)
      }
    } finally {
      t.mock.setFallback()
    }
  })

  it('values shorter than 8 characters are left alone (they would hit common words)', async () => {
    await mkdir(t.home, { recursive: true })
    await writeFile(path.join(t.home, '.credentials.yaml'), 'version: 1\nrefs:\n  SHORT_PIN: hello\n', { mode: 0o600 })
    t.mock.enqueue(reply.text('hello there'))
    const result = await t.headless(['greet me'])
    expect(result.code, result.stderr).toBe(0)
    expect(result.stdout).toBe('hello there\n')
  })
})
