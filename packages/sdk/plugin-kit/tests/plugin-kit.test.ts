import * as tools from '@dsh/tools'
import { describe, expect, it } from 'vitest'
import { Context, defineTool, Schema, ToolError, ToolRuntime, z } from '../src/index.ts'

/** A plugin as an author writes it, against the kit alone. */
const shout = {
  name: 'shout',
  inject: ['tools'],
  Config: Schema.object({ suffix: Schema.string().default('!') }),
  apply(ctx: Context, config: { suffix: string }) {
    ctx.tools.register(
      ctx,
      defineTool({
        name: 'shout',
        description: 'Upper-cases a text.',
        parameters: z.object({ text: z.string() }),
        access: () => ({ kind: 'other', summary: 'shout' }),
        execute: async (args) => {
          if (!args.text) throw new ToolError('INVALID_ARGUMENTS', 'nothing to shout')
          return { content: `${args.text.toUpperCase()}${config.suffix}` }
        },
      }),
    )
  },
}

const run = { signal: new AbortController().signal, cwd: '/', sessionId: 's', sessionState: new Map() }

describe('@dsh/plugin-kit', () => {
  it('is what the in-box packages export: a plugin written against it runs in dsh and goes away with it', async () => {
    expect(ToolRuntime).toBe(tools.ToolRuntime)
    const root = new Context()
    await root.plugin(tools, {} as tools.ToolsConfig)
    const fiber = root.plugin(shout, { suffix: '!!' })
    await fiber
    const call = (text: string) =>
      root.tools.execute({ callId: 'c1' as never, name: 'shout', arguments: JSON.stringify({ text }) }, run)
    expect((await call('hey')).content).toEqual([{ type: 'text', text: 'HEY!!' }])
    expect(await call('')).toMatchObject({ isError: true, error: { code: 'INVALID_ARGUMENTS' } })
    await fiber.dispose()
    expect(root.tools.list()).toEqual([])
    await root.fiber.dispose()
  })
})
