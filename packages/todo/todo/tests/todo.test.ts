import { Context } from '@dsh/cordis'
import type { ToolCallId } from '@dsh/llm'
import { type Session, SessionStore } from '@dsh/session'
import { textOf, type ToolResult, ToolRuntime } from '@dsh/tools'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import * as todo from '../src/index.ts'
import { currentTodos, type Todo, type TodoConfig } from '../src/index.ts'

let root: Context
let session: Session

beforeEach(async () => {
  root = new Context()
  await root.plugin(ToolRuntime, {} as never)
  await root.plugin(SessionStore)
  session = root.sessions.create({ cwd: '/work' })
})

afterEach(async () => {
  await root.fiber.dispose()
})

async function mount(config: Partial<TodoConfig> = {}) {
  const fiber = root.plugin(todo, config as TodoConfig)
  await fiber
  return fiber
}

let calls = 0
function write(todos: unknown, sessionId: string = session.id): Promise<ToolResult> {
  return root.tools.execute(
    { callId: `call-${++calls}` as ToolCallId, name: 'todo_write', arguments: JSON.stringify({ todos }) },
    { signal: new AbortController().signal, cwd: '/work', sessionId, sessionState: new Map() },
  )
}

const logged = () => session.events.filter((e) => e.type === 'todo/write')

const list: Todo[] = [
  { content: 'Read the parser', status: 'completed' },
  { content: 'Fix the bug', status: 'in_progress' },
  { content: 'Run the tests', status: 'pending' },
]

describe('todo_write', () => {
  it('logs the whole list as todo/write and summarises it for the model', async () => {
    await mount()
    const result = await write(list)
    expect(result.isError).toBe(false)
    expect(textOf(result.content)).toBe(
      [
        'Updated the todo list: 1 pending, 1 in progress, 1 completed.',
        '[x] Read the parser',
        '[>] Fix the bug',
        '[ ] Run the tests',
      ].join('\n'),
    )
    expect(result.meta).toEqual({ counts: { pending: 1, inProgress: 1, completed: 1 } })
    expect(logged()).toHaveLength(1)
    expect(logged()[0]).toMatchObject({ type: 'todo/write', data: { todos: list }, ignorable: true })
    expect(currentTodos(session)).toEqual(list)
  })

  it('replaces the list on each call; currentTodos reads the last one', async () => {
    await mount()
    expect(currentTodos(session)).toEqual([])
    await write(list)
    const done = list.map((item) => ({ content: item.content, status: 'completed' as const }))
    await write(done)
    expect(currentTodos(session)).toEqual(done)
    expect(textOf((await write([])).content)).toBe('The todo list is now empty.')
    expect(currentTodos(session)).toEqual([])
    expect(logged()).toHaveLength(3)
  })

  it('refuses two items in progress by default, naming them, and logs nothing', async () => {
    await mount()
    const result = await write([
      { content: 'A', status: 'in_progress' },
      { content: 'B', status: 'pending' },
      { content: 'C', status: 'in_progress' },
    ])
    expect(result.error?.code).toBe('INVALID_TODOS')
    expect(textOf(result.content)).toBe(
      'Error: 2 items are in_progress (todos[0], todos[2]); keep exactly one in_progress and mark the others pending or completed',
    )
    expect(logged()).toHaveLength(0)
  })

  it('allows several items in progress with allowParallelInProgress', async () => {
    await mount({ allowParallelInProgress: true })
    const result = await write([
      { content: 'A', status: 'in_progress' },
      { content: 'B', status: 'in_progress' },
    ])
    expect(result.isError).toBe(false)
    expect(root.tools.get('todo_write')?.description).not.toContain('Exactly one item')
  })

  it('refuses repeated or empty items, unknown statuses and extra keys', async () => {
    await mount({ maxItems: 3 })
    const repeated = await write([
      { content: 'A', status: 'pending' },
      { content: ' A ', status: 'completed' },
    ])
    expect(textOf(repeated.content)).toBe('Error: todos[1] repeats todos[0] ("A"); each item needs its own content')
    for (const bad of [
      [{ content: '  ', status: 'pending' }],
      [{ content: 'A', status: 'done' }],
      [{ content: 'A', status: 'pending', priority: 1 }],
      Array.from({ length: 4 }, (_, i) => ({ content: `T${i}`, status: 'pending' })),
    ]) {
      const result = await write(bad)
      expect(result.error?.code).toBe('INVALID_ARGUMENTS')
    }
    expect(logged()).toHaveLength(0)
  })

  it('reports a call from a session that is not open', async () => {
    await mount()
    const result = await write(list, 'session-gone')
    expect(result.error?.code).toBe('NO_SESSION')
  })

  it('removes the tool and the event type with the plugin', async () => {
    const fiber = await mount()
    expect(root.sessions.isKnownType('todo/write')).toBe(true)
    await fiber.dispose()
    expect(root.tools.get('todo_write')).toBeUndefined()
    expect(root.sessions.isKnownType('todo/write')).toBe(false)
  })
})
