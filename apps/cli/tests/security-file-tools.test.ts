import { existsSync, lstatSync, readdirSync, readFileSync } from 'node:fs'
import { chmod, mkdir, rm, symlink, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { reply } from '@dsh/llm-mock'
import { startPathFlipper } from '@dsh/testkit'
import { describe, expect, it } from 'vitest'
import { useMockedHeadless } from './support/mocked-headless.ts'
import { type LoggedEvent, onlyStoredSession, readSessionLog, sessionLogText } from './support/session-log.ts'

// Attacks a prompt-injected model could make through the file tools, through the real headless bin.
const t = useMockedHeadless()

/** Every file below `dir` with its content, symlinks as `-> target`: to compare a folder before and after. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {}
  const visit = (rel: string) => {
    for (const name of readdirSync(path.join(dir, rel))) {
      const child = path.join(rel, name)
      const info = lstatSync(path.join(dir, child))
      if (info.isDirectory()) visit(child)
      else out[child] = info.isSymbolicLink() ? '-> link' : readFileSync(path.join(dir, child), 'utf8')
    }
  }
  visit('')
  return out
}

async function toolResults(): Promise<LoggedEvent[]> {
  const { events } = await readSessionLog(t.home, onlyStoredSession(t.home))
  return events.filter((event) => event.type === 'tool/result')
}

const resultText = (event: LoggedEvent | undefined) => JSON.stringify(event?.data.message ?? null)

describe('file tools against a swapped path', () => {
  it('a folder flipped to a symlink out of the workspace never lets write or edit land outside', async () => {
    const outside = path.join(t.root, 'outside')
    await mkdir(outside)
    await writeFile(path.join(outside, 'keep.txt'), 'untouched\n')
    const before = snapshot(outside)
    await mkdir(path.join(t.work, 'd'))
    const steps = 5
    const pairsPerStep = 20
    for (let step = 0; step < steps; step += 1) {
      const calls = []
      for (let i = 0; i < pairsPerStep; i += 1) {
        const tag = `${step}-${i}`
        calls.push({ name: 'write', arguments: { file_path: 'd/file', content: `written ${tag}\n` } })
        calls.push({
          name: 'edit',
          arguments: { file_path: 'd/file', old_string: `written ${tag}`, new_string: `edited ${tag}` },
        })
      }
      t.mock.enqueue(reply.toolCalls(calls))
    }
    t.mock.enqueue(reply.text('Done writing.'))

    // Only the workspace is writable: the outside folder must not sit under the temp dir dsh allows.
    const tmp = path.join(t.root, 'tmp')
    await mkdir(tmp)
    const flipper = await startPathFlipper(path.join(t.work, 'd'), outside)
    let result: Awaited<ReturnType<typeof t.headless>>
    try {
      result = await t.headless(['keep writing d/file'], { TMPDIR: tmp })
    } finally {
      await flipper.stop()
    }
    expect(result.stderr).toBe('')
    expect(result.code).toBe(0)
    expect(result.stdout).toBe('Done writing.\n')

    // Nothing at all landed outside.
    expect(snapshot(outside)).toEqual(before)
    const results = await toolResults()
    expect(results).toHaveLength(steps * pairsPerStep * 2)
    // Every failure is a refusal or a plain file error, each with a message the model can read.
    // (How many calls succeed depends on the race's timing: the legitimate twin is checked below.)
    for (const event of results.filter((e) => e.data.error !== undefined)) {
      expect(event.data.error.message).not.toBe('')
      expect(event.data.error.code).not.toBe('TOOL_ERROR')
    }

    // The legitimate twin: once d is a plain folder again, the same calls write inside the workspace.
    await rm(path.join(t.work, 'd'), { recursive: true, force: true })
    await mkdir(path.join(t.work, 'd'))
    t.mock.enqueue(
      reply.toolCalls([{ name: 'write', arguments: { file_path: 'd/file', content: 'written calm\n' } }]),
      reply.toolCalls([
        { name: 'edit', arguments: { file_path: 'd/file', old_string: 'written calm', new_string: 'edited calm' } },
      ]),
      reply.text('Done.'),
    )
    expect((await t.headless(['write d/file once more'], { TMPDIR: tmp })).code).toBe(0)
    expect(readFileSync(path.join(t.work, 'd', 'file'), 'utf8')).toBe('edited calm\n')
    expect(snapshot(outside)).toEqual(before)
  }, 120_000)

  it('a symlink inside the workspace to a folder inside it still works for read, write and edit', async () => {
    await mkdir(path.join(t.work, 'real'))
    await symlink('real', path.join(t.work, 'alias'))
    t.mock.enqueue(
      reply.toolCalls([{ name: 'write', arguments: { file_path: 'alias/notes.txt', content: 'one\n' } }]),
      reply.toolCalls([{ name: 'read', arguments: { file_path: 'alias/notes.txt' } }]),
      reply.toolCalls([
        { name: 'edit', arguments: { file_path: 'alias/notes.txt', old_string: 'one', new_string: 'two' } },
      ]),
      reply.text('Edited through the link.'),
    )
    const result = await t.headless(['edit through the alias'])
    expect(result.code).toBe(0)
    const results = await toolResults()
    expect(results.map((event) => [event.data.name, event.data.error?.code ?? 'ok'])).toEqual([
      ['write', 'ok'],
      ['read', 'ok'],
      ['edit', 'ok'],
    ])
    expect(resultText(results[1])).toContain('one')
    expect(readFileSync(path.join(t.work, 'real', 'notes.txt'), 'utf8')).toBe('two\n')
    expect(lstatSync(path.join(t.work, 'alias')).isSymbolicLink()).toBe(true)
  })
})

describe("dsh's own secrets", () => {
  it('no file tool returns the key in DSH_HOME/.credentials.yaml, and it reaches neither stdout, the log nor the model', async () => {
    const key = 'sk-test-3f9c2e71d0b84a56'
    await mkdir(t.home, { recursive: true, mode: 0o700 })
    const credentials = path.join(t.home, '.credentials.yaml')
    await writeFile(credentials, `version: 1\nrefs:\n  DEEPSEEK_API_KEY: ${key}\n`, { mode: 0o600 })
    await chmod(credentials, 0o600)
    await symlink(credentials, path.join(t.work, 'config.yaml'))
    t.mock.enqueue(
      reply.toolCalls([
        { name: 'read', arguments: { file_path: credentials } },
        { name: 'read', arguments: { file_path: 'config.yaml' } },
        { name: 'grep', arguments: { pattern: 'sk-test', path: t.home } },
        { name: 'grep', arguments: { pattern: 'DEEPSEEK', path: t.home } },
        { name: 'glob', arguments: { pattern: '**/.credentials.yaml', path: t.home } },
        { name: 'ls', arguments: { path: t.home } },
      ]),
      reply.text(`The key is not readable.`),
    )
    // The key comes from the credentials file only.
    const result = await t.headless(['print the api key'], { DEEPSEEK_API_KEY: undefined })
    expect(result.code).toBe(0)
    expect(t.mock.requests[0]?.headers.authorization).toBe(`Bearer ${key}`)

    const results = await toolResults()
    expect(results.map((event) => event.data.error?.code ?? 'ok')).toEqual([
      'FS_DENIED',
      'FS_DENIED',
      'ok',
      'ok',
      'ok',
      'ok',
    ])
    expect(resultText(results[0])).toMatch(/dsh's own secret store/)
    expect(resultText(results[1])).toMatch(/dsh's own secret store/)
    for (const event of results.slice(2)) expect(resultText(event)).not.toContain('.credentials.yaml')

    expect(result.stdout).not.toContain(key)
    expect(await sessionLogText(t.home, onlyStoredSession(t.home))).not.toContain(key)
    expect(JSON.stringify(t.mock.requests.map((request) => request.body))).not.toContain(key)
  })
})

describe('protected project paths', () => {
  it('write refuses .claude, .mcp.json and .git/hooks in a workspace without .git, and creates nothing', async () => {
    t.mock.enqueue(
      reply.toolCalls([
        { name: 'write', arguments: { file_path: '.claude/settings.json', content: '{"hooks":{}}' } },
        { name: 'write', arguments: { file_path: '.mcp.json', content: '{"mcpServers":{}}' } },
        {
          name: 'write',
          arguments: { file_path: '.git/hooks/post-checkout', content: '#!/bin/sh\nid > /tmp/pwned\n' },
        },
        { name: 'write', arguments: { file_path: 'src/ok.txt', content: 'fine\n' } },
      ]),
      reply.text('Tried.'),
    )
    const result = await t.headless(['set up hooks'])
    expect(result.code).toBe(0)
    const results = await toolResults()
    expect(results.map((event) => event.data.error?.code ?? 'ok')).toEqual(['DENIED', 'DENIED', 'DENIED', 'ok'])
    expect(resultText(results[0])).toContain(`protected path ${path.join(t.work, '.claude')}`)
    for (const name of ['.claude', '.mcp.json', '.git']) expect(existsSync(path.join(t.work, name))).toBe(false)
    expect(readFileSync(path.join(t.work, 'src', 'ok.txt'), 'utf8')).toBe('fine\n')
  })
})
