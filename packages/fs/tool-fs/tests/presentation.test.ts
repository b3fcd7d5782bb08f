import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Setup, setup } from './helpers.ts'

let s: Setup

beforeAll(async () => {
  s = await setup()
})

afterAll(async () => {
  await s.dispose()
})

describe('presentation', () => {
  // Titles as surfaces show them: paths relative inside the workspace, the bare verb when the call names no path.
  it.each([
    ['read', { file_path: 'src/a.ts' }, 'Read src/a.ts'],
    ['read', { file_path: 'src/a.ts', offset: 10, limit: 5 }, 'Read src/a.ts (from line 10, 5 lines)'],
    ['read', { file_path: 'src/a.ts', limit: 5 }, 'Read src/a.ts (from line 1, 5 lines)'],
    ['read', { file_path: 'src/a.ts', offset: 7 }, 'Read src/a.ts (from line 7)'],
    ['read', {}, 'Read'],
    ['read_image', { file_path: 'shot.png' }, 'Read image shot.png'],
    ['read_image', {}, 'Read image'],
    ['edit', { file_path: 'g.ts', old_string: 'a', new_string: 'b' }, 'Edit g.ts'],
    ['edit', {}, 'Edit'],
    ['write', { file_path: 'new.txt', content: 'x' }, 'Write new.txt'],
    ['write', {}, 'Write'],
    ['glob', { pattern: '**/*.ts', path: 'src' }, 'Find **/*.ts in src'],
    ['glob', { pattern: '*.md' }, 'Find *.md'],
    ['glob', { path: 'src' }, 'Find  in src'],
    ['grep', { pattern: 'todo', path: 'src' }, 'Search "todo" in src'],
    ['grep', { pattern: 'todo' }, 'Search "todo"'],
    ['ls', { path: 'src' }, 'List src'],
    ['ls', {}, 'List .'],
  ])('%s %j is titled %j', (name, args, title) => {
    expect(s.root.tools.present({ name, arguments: JSON.stringify(args) }, s.workspace).title).toBe(title)
  })

  // The change an edit or a write shows as a diff; none unless the call carries the path and the texts.
  it.each([
    ['edit', { file_path: 'g.ts', old_string: 'a', new_string: 'b' }, { path: 'g.ts', oldText: 'a', newText: 'b' }],
    ['edit', { file_path: 'g.ts', old_string: 'a' }, undefined],
    ['edit', { old_string: 'a', new_string: 'b' }, undefined],
    ['write', { file_path: 'new.txt', content: 'x' }, { path: 'new.txt', oldText: null, newText: 'x' }],
    ['write', { file_path: 'new.txt' }, undefined],
    ['write', { content: 'x' }, undefined],
  ])('%s %j shows the change %j', (name, args, change) => {
    const shown = s.root.tools.present({ name, arguments: JSON.stringify(args) }, s.workspace).change
    expect(shown).toEqual(change && { ...change, path: path.join(s.workspace, change.path) })
  })

  it('shows a path outside the workspace as absolute', () => {
    const far = path.join(s.outside, 'b.txt')
    const call = { name: 'edit', arguments: JSON.stringify({ file_path: far }) }
    expect(s.root.tools.present(call, s.workspace).title).toBe(`Edit ${far}`)
  })
})
