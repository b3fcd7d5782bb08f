import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { reply } from '@dsh/llm-mock'
import { repoRoot, startDsh } from '@dsh/testkit'
import { describe, expect, it } from 'vitest'
import { useMockedHeadless } from './support/mocked-headless.ts'
import { readSessionLog } from './support/session-log.ts'

const t = useMockedHeadless()

/** A small seeded generator (mulberry32): the kill moments vary, and a failure can be replayed. */
function seeded(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let x = Math.imul(a ^ (a >>> 15), 1 | a)
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
}

const textOf = (message: { content: unknown }) =>
  typeof message.content === 'string' ? message.content : JSON.stringify(message.content)

describe('a session id announced by headless --json', () => {
  it('survives a SIGKILL at any moment after it appears: --resume finds the session and its first message', async () => {
    const SEED = 1604
    const random = seeded(SEED)
    // The first run of each pair stalls mid-reply (so it is alive when killed); a follow-up is answered.
    t.mock.setFallback((request) => {
      const last = request.body.messages.at(-1)
      if (textOf(last).includes('follow-up')) return reply.text('Resumed.')
      return reply.stall(Math.floor(random() * 4), reply.text('This reply never finishes streaming'))
    })
    // An MCP server that takes a moment to start: the first step waits for it (agent/pre-step), which
    // leaves time between the session's creation and its first user message for a crash to fall into.
    const server = path.join(repoRoot, 'packages/mcp/mcp/tests/fixtures/server.mjs')
    const patch = path.join(t.root, 'slow-mcp.patch.yml')
    const slow = { command: 'sh', args: ['-c', `sleep 0.2; exec "${process.execPath}" "${server}"`] }
    await writeFile(patch, JSON.stringify([{ id: 'mcp', config: { servers: { slow } } }]))
    for (let i = 0; i < 30; i++) {
      const task = `first task number ${i}`
      const running = startDsh(['--profile', 'headless', '--patch', patch, '--json', task], {
        home: t.home,
        cwd: t.work,
        env: t.env(),
      })
      await running.waitFor(/"type":"session"/, { stream: 'stdout' })
      const sessionId = JSON.parse(running.stdout.split('\n')[0] as string).sessionId as string
      // Somewhere from at once to a little later: before, during or after the model request.
      const delayMs = Math.floor(random() * 80)
      if (delayMs) await new Promise((resolve) => setTimeout(resolve, delayMs))
      const killed = await running.kill('SIGKILL')
      expect(killed.signal, `run ${i} (seed ${SEED})`).toBe('SIGKILL')

      const asked = t.mock.requests.length
      const resumed = await t.headless(['--json', '--resume', sessionId, `follow-up ${i}`])
      expect(resumed.stderr, `run ${i} (seed ${SEED}, killed after ${delayMs} ms)`).not.toMatch(/no session/)
      expect(resumed.code, `run ${i}: ${resumed.stderr}`).toBe(0)
      const lines = resumed.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line))
      expect(lines[0]).toEqual({ type: 'session', sessionId, resumed: true })
      expect(lines.at(-1)).toMatchObject({ type: 'result', reason: 'completed', text: 'Resumed.' })
      // The model saw the first message again, and the log holds it.
      const request = t.mock.requests
        .slice(asked)
        .find((r) => textOf(r.body.messages.at(-1)).includes(`follow-up ${i}`))
      expect(request?.body.messages.map(textOf).join('\n')).toContain(task)
      const { events } = await readSessionLog(t.home, sessionId)
      const users = events.filter((e) => e.type === 'user/message').map((e) => JSON.stringify(e.data.message.content))
      expect(users[0]).toContain(task)
      expect(users.at(-1)).toContain(`follow-up ${i}`)
    }
  }, 240_000)
})
