import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { type Context as Ctx, Context } from '@dsh/cordis'
import type { ToolCallId } from '@dsh/llm'
import * as sessionPlugin from '@dsh/session'
import * as subprocessPlugin from '@dsh/subprocess'
import { defineTool, textOf, ToolRuntime } from '@dsh/tools'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import * as hooksPlugin from '../src/index.ts'
import { type HookFlavor, type HooksConfig, interpret, matches, readHooksFile } from '../src/index.ts'

let root: Context
let dir: string

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'dsh-hooks-'))
  root = new Context()
  await root.plugin(ToolRuntime, {} as never)
  await root.plugin(sessionPlugin, {} as never)
  await root.plugin(subprocessPlugin, {} as never)
  await root.plugin(hooksPlugin, {} as HooksConfig)
  await root.plugin({
    name: 'echo-tool',
    inject: ['tools'],
    apply(ctx: Ctx) {
      ctx.tools.register(
        ctx,
        defineTool({
          name: 'echo',
          description: 'Echoes.',
          parameters: z.object({ text: z.string() }),
          execute: ({ text }) => ({ content: text }),
        }),
      )
    },
  })
})

afterEach(async () => {
  await root.fiber.dispose()
  await rm(dir, { recursive: true, force: true })
})

function flavor(file: string): HookFlavor {
  return {
    name: 'test',
    userFiles: () => [file],
    projectFiles: () => [],
    toolNames: (tool) => [tool.toUpperCase(), tool],
    defaultTimeoutSec: 10,
    environment: () => ({}),
  }
}

async function call(text: string) {
  const session = root.sessions.create({ cwd: dir })
  const result = await root.tools.execute(
    { callId: 'c1' as ToolCallId, name: 'echo', arguments: JSON.stringify({ text }) },
    { signal: new AbortController().signal, cwd: dir, sessionId: session.id, sessionState: new Map() },
  )
  return { result, session }
}

describe('hooks', () => {
  it('runs a registered flavor’s hooks until its plugin is disposed', async () => {
    const file = path.join(dir, 'hooks.json')
    await writeFile(
      file,
      JSON.stringify({ hooks: { PreToolUse: [{ matcher: 'ECHO', hooks: [{ command: 'echo no >&2; exit 2' }] }] } }),
    )
    const fiber = root.plugin({
      name: 'flavor',
      inject: ['hooks'],
      apply(ctx: Ctx) {
        ctx.hooks.register(ctx, flavor(file))
      },
    })
    await fiber
    const blocked = await call('hi')
    expect(blocked.result.error?.code).toBe('DENIED')
    expect(textOf(blocked.result.content)).toContain('a PreToolUse hook blocked this call: no')
    expect(blocked.session.events.map((e) => e.type)).toEqual(['hook/invoked', 'hook/result'])
    await fiber.dispose()
    const free = await call('hi')
    expect(textOf(free.result.content)).toBe('hi')
    expect(free.session.events).toHaveLength(0)
  })
})

describe('hooks files read again when they change', () => {
  it('a file created, edited, emptied and removed between two calls counts at the next call', async () => {
    const file = path.join(dir, 'hooks.json')
    const blocking = (reason: string) =>
      JSON.stringify({ hooks: { PreToolUse: [{ hooks: [{ command: `echo ${reason} >&2; exit 2` }] }] } })
    await root.plugin({
      name: 'flavor',
      inject: ['hooks'],
      apply(ctx: Ctx) {
        ctx.hooks.register(ctx, flavor(file))
      },
    })
    expect(textOf((await call('one')).result.content)).toBe('one')
    await writeFile(file, blocking('first'))
    expect(textOf((await call('two')).result.content)).toContain('blocked this call: first')
    // Same length, new content: still seen.
    await writeFile(file, blocking('again'))
    expect(textOf((await call('three')).result.content)).toContain('blocked this call: again')
    await writeFile(file, '')
    expect(textOf((await call('four')).result.content)).toBe('four')
    await writeFile(file, blocking('third'))
    await rm(file)
    expect(textOf((await call('five')).result.content)).toBe('five')
  })
})

describe('interpret', () => {
  it('reads exit codes and the JSON answers Claude Code and Codex hooks print', () => {
    expect(interpret('PreToolUse', 2, '', 'nope\n')).toEqual({ decision: 'block', reason: 'nope' })
    expect(interpret('PreToolUse', 1, '', 'crash')).toEqual({ decision: 'failed', error: 'exit code 1: crash' })
    expect(interpret('PreToolUse', 0, 'plain text', '')).toEqual({ decision: 'none' })
    const deny = { hookSpecificOutput: { permissionDecision: 'deny', permissionDecisionReason: 'r' } }
    expect(interpret('PreToolUse', 0, JSON.stringify(deny), '')).toEqual({ decision: 'block', reason: 'r' })
    expect(interpret('PreToolUse', 0, '{"decision":"approve"}', '')).toEqual({ decision: 'allow' })
    expect(interpret('PreToolUse', 0, '{"hookSpecificOutput":{"permissionDecision":"ask"}}', '')).toEqual({
      decision: 'ask',
    })
    expect(interpret('PostToolUse', 0, '{"decision":"block","reason":"lint failed"}', '')).toEqual({
      decision: 'block',
      reason: 'lint failed',
    })
    expect(interpret('PostToolUse', 0, '{"hookSpecificOutput":{"additionalContext":"3 files changed"}}', '')).toEqual({
      decision: 'none',
      context: '3 files changed',
    })
    expect(interpret('Stop', 0, '{"continue":false,"stopReason":"halt"}', '')).toEqual({
      decision: 'block',
      reason: 'halt',
    })
    expect(interpret('PreToolUse', 0, '{broken', '').decision).toBe('failed')
  })

  it('matches tool names with whole-name patterns', () => {
    expect(matches(undefined, ['Bash'])).toBe(true)
    expect(matches('*', ['Bash'])).toBe(true)
    expect(matches('Bash', ['Bash', 'bash'])).toBe(true)
    expect(matches('Bas', ['Bash'])).toBe(false)
    expect(matches('Edit|Write', ['Write'])).toBe(true)
    expect(matches('mcp__.*', ['mcp__github__issue'])).toBe(true)
    expect(matches('(', ['('])).toBe(true)
  })

  it('names the file and the entry of a malformed hooks file, and skips what dsh does not run', async () => {
    const file = path.join(dir, 'bad.json')
    await writeFile(file, JSON.stringify({ hooks: { PreToolUse: [{ hooks: [{ command: 'x', timeout: -1 }] }] } }))
    expect(() => readHooksFile(file)).toThrow(`${file}: hooks.PreToolUse[0].hooks[0].timeout must be`)
    expect(readHooksFile(path.join(dir, 'missing.json'))).toBeUndefined()
    await writeFile(
      file,
      JSON.stringify({ hooks: { Notification: [], PreToolUse: [{ hooks: [{ type: 'prompt' }] }] } }),
    )
    const parsed = readHooksFile(file)
    expect(parsed?.commands).toEqual([])
    expect(parsed?.skipped).toHaveLength(2)
  })
})
