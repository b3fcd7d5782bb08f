import { presentCall } from '@dsh/tools'
import { describe, expect, it } from 'vitest'
import { mcpPresentation } from '../src/convert.ts'

const show = (tool: Parameters<typeof mcpPresentation>[1]) =>
  presentCall('mcp__docs__x', { presentation: mcpPresentation('docs', tool) }, '{}', '/work')

describe('the presentation of MCP tools', () => {
  it('is generic, titled by the tool and its server, when the server gives no annotations', () => {
    expect(show({ name: 'add' })).toEqual({
      title: 'add (docs)',
      kind: 'other',
      view: 'generic',
      locations: [],
      unfolded: false,
    })
  })

  it("follows the server's hints: a display title, read-only reads or fetches, destructive deletes", () => {
    expect(show({ name: 'get', title: 'Get a page', annotations: { readOnlyHint: true } })).toMatchObject({
      title: 'Get a page (docs)',
      kind: 'read',
    })
    expect(
      show({ name: 'search', annotations: { title: 'Web search', readOnlyHint: true, openWorldHint: true } }),
    ).toMatchObject({
      title: 'Web search (docs)',
      kind: 'fetch',
    })
    expect(show({ name: 'drop', annotations: { destructiveHint: true } })).toMatchObject({
      title: 'drop (docs)',
      kind: 'delete',
      view: 'generic',
    })
  })
})
