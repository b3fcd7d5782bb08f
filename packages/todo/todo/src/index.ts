import { type Context, Schema } from '@dsh/cordis'
import type { Session } from '@dsh/session'
import { defineTool, ToolError, toolParametersBy } from '@dsh/tools'
import { z } from 'zod'

import type { Todo, TodoStatus } from '@dsh/wire-types'

/** The list and its `todo/write` event are wire types (the web app shows them). */
export type { Todo, TodoStatus } from '@dsh/wire-types'

export const TODO_EVENT = 'todo/write'

export interface TodoConfig {
  allowParallelInProgress: boolean
  maxItems: number
}

export const Config: Schema<TodoConfig> = Schema.object({
  allowParallelInProgress: Schema.boolean()
    .default(false)
    .description(
      'Let more than one item be in_progress at once. Off by default: one thing at a time keeps the list honest.',
    ),
  maxItems: Schema.natural().min(1).default(100).description('The most items one list may hold.'),
})

export const name = 'todo'
export const inject = ['tools', 'sessions']

/** The session's current todo list: the last `todo/write`, or none. For surfaces. */
export function currentTodos(session: Session): Todo[] {
  return session.last(TODO_EVENT)?.data.todos.map((todo) => ({ ...todo })) ?? []
}

const todoItem = z
  .object({
    content: z.string().trim().min(1).describe('What to do, in the imperative: "Run the tests".'),
    status: z.enum(['pending', 'in_progress', 'completed']).describe('pending, in_progress or completed.'),
  })
  .strict()

/** todo_write's parameters for the most items one list may hold. */
const todoParameters = toolParametersBy((maxItems: number) =>
  z.object({ todos: z.array(todoItem).max(maxItems).describe('The complete list, in order.') }),
)
todoParameters(Config().maxItems)

/** Registers `todo_write`, which replaces the session's todo list and logs it as `todo/write`. */
export function apply(ctx: Context, config: TodoConfig) {
  ctx.sessions.registerEventType(ctx, TODO_EVENT)

  ctx.tools.register(
    ctx,
    defineTool({
      name: 'todo_write',
      presentation: { kind: 'think', view: 'generic', title: () => 'Update the todo list' },
      description:
        'Keep a todo list for multi-step work, so you and the user can follow progress. Send the whole list each time; it replaces the previous one. ' +
        (config.allowParallelInProgress
          ? 'Mark items in_progress while you work on them and completed as soon as they are done.'
          : 'Exactly one item should be in_progress while you work; mark it completed as soon as it is done, then start the next.') +
        ' Skip the list for simple tasks of one or two steps.',
      parameters: todoParameters(config.maxItems),
      readOnly: true,
      access: () => ({ kind: 'read', summary: 'update the todo list' }),
      execute(args, run) {
        const todos: Todo[] = args.todos
        checkList(todos, config)
        const session = ctx.sessions.get(run.sessionId)
        if (!session)
          throw new ToolError('NO_SESSION', `session ${run.sessionId} is not open, so its todo list cannot be kept`)
        session.append(TODO_EVENT, { todos }, { ignorable: true })
        return { content: summarize(todos), meta: { counts: counts(todos) } }
      },
    }),
  )
}

function checkList(todos: readonly Todo[], config: TodoConfig): void {
  const seen = new Map<string, number>()
  todos.forEach((todo, index) => {
    const first = seen.get(todo.content)
    if (first !== undefined)
      throw new ToolError(
        'INVALID_TODOS',
        `todos[${index}] repeats todos[${first}] ("${todo.content}"); each item needs its own content`,
      )
    seen.set(todo.content, index)
  })
  const active = todos.flatMap((todo, index) => (todo.status === 'in_progress' ? [index] : []))
  if (!config.allowParallelInProgress && active.length > 1) {
    throw new ToolError(
      'INVALID_TODOS',
      `${active.length} items are in_progress (todos[${active.join('], todos[')}]); keep exactly one in_progress and mark the others pending or completed`,
    )
  }
}

function counts(todos: readonly Todo[]) {
  return {
    pending: todos.filter((t) => t.status === 'pending').length,
    inProgress: todos.filter((t) => t.status === 'in_progress').length,
    completed: todos.filter((t) => t.status === 'completed').length,
  }
}

const MARK: Record<TodoStatus, string> = { pending: '[ ]', in_progress: '[>]', completed: '[x]' }

function summarize(todos: readonly Todo[]): string {
  if (todos.length === 0) return 'The todo list is now empty.'
  const { pending, inProgress, completed } = counts(todos)
  const lines = todos.map((todo) => `${MARK[todo.status]} ${todo.content}`)
  return [
    `Updated the todo list: ${pending} pending, ${inProgress} in progress, ${completed} completed.`,
    ...lines,
  ].join('\n')
}
