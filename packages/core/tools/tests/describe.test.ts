import { describe, expect, it } from 'vitest'
import { describeToolCall, parseCallArguments, shownPath } from '../src/describe.ts'

const cwd = '/work/project'

describe('describeToolCall', () => {
  it.each([
    ['read', { path: 'src/a.ts', offset: 10, limit: 20 }, 'Read src/a.ts (from line 10, 20 lines)'],
    ['read', { path: '/etc/hosts' }, 'Read /etc/hosts'],
    ['write', { path: '/work/project/out.txt', content: 'x' }, 'Write out.txt'],
    ['edit', { file_path: 'b.ts' }, 'Edit b.ts'],
    ['ls', {}, 'List .'],
    ['glob', { pattern: '**/*.ts', path: 'src' }, 'Find **/*.ts in src'],
    ['grep', { pattern: 'TODO' }, 'Search "TODO"'],
    ['bash', { command: 'npm test\n  -- --watch=false' }, '`npm test -- --watch=false`'],
    ['todo_write', { todos: [] }, 'Update the todo list'],
    ['mcp__docs__fetch', { url: 'x' }, 'fetch (docs)'],
    ['task', { description: 'Find the parser' }, 'task: Find the parser'],
    ['job_list', {}, 'job_list'],
  ])('%s %j', (name, args, line) => {
    expect(describeToolCall(name, args, cwd)).toBe(line)
  })

  it('gives the name for arguments that are not a JSON object', () => {
    expect(parseCallArguments('{"path": ')).toBeUndefined()
    expect(parseCallArguments('[1]')).toBeUndefined()
    expect(parseCallArguments('')).toEqual({})
    expect(describeToolCall('read', parseCallArguments('nope'), cwd)).toBe('read')
  })

  it('shows paths relative inside the workspace and absolute outside it', () => {
    expect(shownPath(cwd, '.')).toBe('.')
    expect(shownPath(cwd, 'a/../b.ts')).toBe('b.ts')
    expect(shownPath(cwd, '../other/c.ts')).toBe('/work/other/c.ts')
  })
})
