import { type Context as Ctx, Context } from '@dsh/cordis'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { z } from 'zod'
import {
  defineTool,
  parametersJsonSchema,
  type ToolDefinition,
  toolParameters,
  toolParametersBy,
} from '../src/index.ts'
import { bootTools, mountTools } from './tree.ts'

// zod's namespace is frozen, so the conversion is observed through a pass-through wrapper of the module.
const conversions = vi.hoisted(() => ({ schemas: [] as unknown[] }))
vi.mock('zod', async (importOriginal) => {
  const actual = await importOriginal<typeof import('zod')>()
  const toJSONSchema: typeof actual.z.toJSONSchema = ((schema: unknown, options: unknown) => {
    conversions.schemas.push(schema)
    return (actual.z.toJSONSchema as (schema: unknown, options: unknown) => unknown)(schema, options)
  }) as typeof actual.z.toJSONSchema
  return { ...actual, z: { ...actual.z, toJSONSchema } }
})

function conversionsOf(schema: unknown): number {
  return conversions.schemas.filter((converted) => converted === schema).length
}

const shared = z.object({ path: z.string().min(1).describe('Where to look.'), depth: z.number().int().default(1) })

function toolWith(name: string, parameters: z.ZodObject): ToolDefinition {
  return defineTool({ name, description: `The ${name} tool.`, parameters, execute: () => ({ content: name }) })
}

let root: Context

beforeEach(() => {
  root = new Context()
})

afterEach(async () => {
  await root.fiber.dispose()
})

const runtime = () => bootTools(root)
const mount = (...definitions: ToolDefinition[]) => mountTools(root, 'schema-tools', ...definitions)

describe('parameter schemas are converted once per schema object', () => {
  it('converts a schema once across definitions, registrations and runtimes', async () => {
    const tools = await runtime()
    const first = await mount(toolWith('first', shared), toolWith('second', shared))
    expect(tools.schemas().map((schema) => schema.parameters)).toEqual([
      parametersJsonSchema(toolWith('first', shared)),
      parametersJsonSchema(toolWith('second', shared)),
    ])
    await first.dispose()
    expect(tools.schemas()).toEqual([])
    await mount(toolWith('first', shared))
    await root.fiber.dispose()

    root = new Context()
    const again = await runtime()
    await mount(toolWith('third', shared))
    expect(again.schemas()[0]?.parameters).toEqual({
      type: 'object',
      properties: {
        path: { type: 'string', minLength: 1, description: 'Where to look.' },
        depth: { type: 'integer', default: 1, minimum: Number.MIN_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER },
      },
      required: ['path'],
    })
    expect(conversionsOf(shared)).toBe(1)
  })

  it('does the work in toolParameters, so a later registration converts nothing', async () => {
    const early = toolParameters(z.object({ query: z.string().describe('What to find.') }))
    expect(conversionsOf(early)).toBe(1)
    const tools = await runtime()
    await mount(toolWith('find', early))
    expect(tools.schemas()[0]?.parameters).toEqual({
      type: 'object',
      properties: { query: { type: 'string', description: 'What to find.' } },
      required: ['query'],
    })
    expect(conversionsOf(early)).toBe(1)
  })

  it('hands every caller its own copy', async () => {
    const schema = toolParameters(z.object({ tags: z.array(z.string()).describe('Labels.') }))
    const definition = toolWith('tag', schema)
    const first = parametersJsonSchema(definition) as { properties: { tags: { description?: string } } }
    first.properties.tags.description = 'changed'
    delete (first as { required?: unknown }).required
    const second = parametersJsonSchema(definition)
    expect(second).toEqual({
      type: 'object',
      properties: { tags: { type: 'array', items: { type: 'string' }, description: 'Labels.' } },
      required: ['tags'],
    })
    expect(second).not.toBe(first)

    const tools = await runtime()
    await mount(definition)
    const shown = tools.schemas()[0]?.parameters as { properties: { tags: { type?: string } } }
    shown.properties.tags.type = 'number'
    expect(parametersJsonSchema(definition)).toEqual(second)
    expect(conversionsOf(schema)).toBe(1)
  })

  it('builds a config-shaped schema once per list of values', () => {
    let builds = 0
    const limited = toolParametersBy((max: number, unit: string) => {
      builds += 1
      return z.object({ items: z.array(z.string()).max(max).describe(`In ${unit}.`) })
    })
    expect(limited(5, 'kg')).toBe(limited(5, 'kg'))
    expect(limited(7, 'kg')).not.toBe(limited(5, 'kg'))
    expect(limited(5, 'lb')).not.toBe(limited(5, 'kg'))
    expect(builds).toBe(3)
    expect(conversionsOf(limited(5, 'kg'))).toBe(1)
    expect(parametersJsonSchema(toolWith('limited', limited(7, 'lb')))).toMatchObject({
      properties: { items: { maxItems: 7, description: 'In lb.' } },
    })
  })
})

describe('a schema JSON Schema cannot express', () => {
  it('is refused at registration, naming the tool, even when toolParameters saw it first', async () => {
    const dated = toolParameters(z.object({ when: z.date() }))
    const tools = await runtime()
    const fiber = root.plugin({
      name: 'dated-tool',
      inject: ['tools'],
      apply(ctx: Ctx) {
        ctx.tools.register(ctx, toolWith('schedule', dated))
      },
    })
    await expect(fiber).rejects.toThrow(
      /^tool "schedule": its parameters cannot be expressed as JSON Schema: Date cannot be represented/,
    )
    expect(tools.schemas()).toEqual([])
    expect(() => parametersJsonSchema(toolWith('calendar', dated))).toThrow(/^tool "calendar": its parameters/)
    expect(conversionsOf(dated)).toBe(1)
  })
})
