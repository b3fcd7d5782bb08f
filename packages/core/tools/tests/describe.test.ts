import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { defineTool } from '../src/define.ts'
import type { SessionEvent } from '@dsh/wire-types'
import { parseCallArguments, presentCall, shownPath, textArgument, withPresentation } from '../src/describe.ts'

const cwd = '/work/project'

const deploy = defineTool({
  name: 'deploy',
  description: 'Ship a folder.',
  parameters: z.object({ target: z.string() }),
  presentation: {
    kind: 'execute',
    view: 'terminal',
    title: (args, shown) => `Deploy ${shown(textArgument(args, 'target') ?? '.')}`,
    locations: (args) => [textArgument(args, 'target') ?? '.'],
    command: (args) => `deploy ${textArgument(args, 'target') ?? ''}`,
  },
  execute: () => ({ content: 'ok' }),
})

describe('presentCall', () => {
  it("applies the tool's own presentation: title, kind, view, absolute locations, command", () => {
    expect(presentCall('deploy', deploy, JSON.stringify({ target: '/work/project/site' }), cwd)).toEqual({
      title: 'Deploy site',
      kind: 'execute',
      view: 'terminal',
      locations: ['/work/project/site'],
      command: 'deploy /work/project/site',
      unfolded: true,
    })
  })

  it('shows a tool without a presentation (or an unknown one) generically: its name with a description or path', () => {
    expect(presentCall('task', undefined, JSON.stringify({ description: 'Find\n the parser' }), cwd)).toEqual({
      title: 'task: Find the parser',
      kind: 'other',
      view: 'generic',
      locations: [],
      unfolded: false,
    })
    expect(presentCall('lint', undefined, JSON.stringify({ file_path: 'src/a.ts' }), cwd)).toMatchObject({
      title: 'lint: src/a.ts',
      locations: ['/work/project/src/a.ts'],
    })
  })

  it('gives the name, and the declared kind and view, for arguments that are not a JSON object', () => {
    expect(presentCall('deploy', deploy, '{"target": ', cwd)).toEqual({
      title: 'deploy',
      kind: 'execute',
      view: 'terminal',
      locations: [],
      unfolded: true,
    })
    expect(parseCallArguments('[1]')).toBeUndefined()
    expect(parseCallArguments('')).toEqual({})
  })

  it('counts a presentation function that throws as absent', () => {
    const broken = {
      presentation: {
        kind: 'read' as const,
        view: 'read' as const,
        title: () => {
          throw new Error('boom')
        },
      },
    }
    expect(presentCall('peek', broken, '{}', cwd)).toMatchObject({ title: 'peek', kind: 'read', view: 'read' })
  })

  it('refuses a presentation with an unknown kind or view, naming the tool', () => {
    const bad = (presentation: unknown) => () =>
      defineTool({
        name: 'odd',
        description: 'x',
        parameters: z.object({}),
        presentation: presentation as never,
        execute: () => ({ content: '' }),
      })
    expect(bad({ kind: 'teleport', view: 'generic' })).toThrow(
      'tool "odd": presentation.kind "teleport" is not one of read, edit',
    )
    expect(bad({ kind: 'read', view: 'hologram' })).toThrow(
      'tool "odd": presentation.view "hologram" is not one of diff, terminal',
    )
    expect(bad({ kind: 'read', view: 'read', title: 'Read' })).toThrow(
      'tool "odd": presentation.title is not a function',
    )
  })

  it('shows paths relative inside the workspace and absolute outside it', () => {
    expect(shownPath(cwd, '.')).toBe('.')
    expect(shownPath(cwd, 'a/../b.ts')).toBe('b.ts')
    expect(shownPath(cwd, '../other/c.ts')).toBe('/work/other/c.ts')
  })
})

describe('withPresentation', () => {
  const tools = {
    present: (call: { name: string; arguments: string }) => presentCall(call.name, deploy, call.arguments, cwd),
  }
  const call = {
    seq: 3,
    ts: 0,
    type: 'tool/call',
    data: { turn: 1, step: 1, callId: 'c1', name: 'deploy', arguments: '{"target":"/work/project/site"}' },
  } as unknown as SessionEvent

  it('adds how the tool shows a call to a tool/call, leaving the event it was given as it was', () => {
    const shown = withPresentation(tools, call, cwd) as SessionEvent<'tool/call'>
    expect(shown.data.presentation).toMatchObject({ title: 'Deploy site', view: 'terminal' })
    expect(shown.data.arguments).toBe('{"target":"/work/project/site"}')
    expect((call as SessionEvent<'tool/call'>).data.presentation).toBeUndefined()
  })

  it('passes other events through, and every event when there is no tool runtime', () => {
    const other = { seq: 4, ts: 0, type: 'turn/end', data: {} } as unknown as SessionEvent
    expect(withPresentation(tools, other, cwd)).toBe(other)
    expect(withPresentation(undefined, call, cwd)).toBe(call)
  })
})
