// The tools dsh offers the model against the seeds' catalog (fixtures/seed-tool-catalog.json):
// names, parameter names, types, required fields and enums. Descriptions and bounds (min, max,
// lengths) are dsh's own and not compared.
import { readFileSync } from 'node:fs'
import { reply } from '@dsh/llm-mock'
import { describe, expect, it } from 'vitest'
import { useMockedHeadless } from './support/mocked-headless.ts'

interface JsonSchema {
  type?: string | string[]
  properties?: Record<string, JsonSchema>
  required?: string[]
  enum?: unknown[]
  items?: JsonSchema
}

interface CatalogEntry {
  package: string
  parameters: JsonSchema
}

const catalog: Record<string, CatalogEntry> = JSON.parse(
  readFileSync(new URL('./fixtures/seed-tool-catalog.json', import.meta.url), 'utf8'),
).tools

/** Tools dsh ships that the seeds do not define. */
const DSH_ONLY = new Set(['ls'])

/**
 * Parameters the seeds define that dsh does not offer yet, per tool, with the work that adds them.
 * The test fails when such a parameter appears (then delete the entry) as much as when another one is missing.
 */
const PENDING: Record<string, { parameters: string[]; until: string }> = {}

/** The part of a schema the catalog fixes: types (an integer is a number), property names, required fields, enums. */
function shape(schema: JsonSchema): JsonSchema {
  const out: JsonSchema = {}
  if (schema.type !== undefined) out.type = schema.type === 'integer' ? 'number' : schema.type
  if (schema.properties)
    out.properties = Object.fromEntries(
      Object.entries(schema.properties)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([key, value]) => [key, shape(value)]),
    )
  if (schema.required?.length) out.required = [...schema.required].sort()
  if (schema.enum) out.enum = [...schema.enum].sort()
  if (schema.items) out.items = shape(schema.items)
  return out
}

function withoutPending(name: string, schema: JsonSchema): JsonSchema {
  const pending = PENDING[name]
  if (!pending) return schema
  const properties = { ...schema.properties }
  for (const key of pending.parameters) delete properties[key]
  return { ...schema, properties }
}

describe("the seeds' tool catalog", () => {
  const t = useMockedHeadless()

  it('every tool dsh registers has the name and parameters the seeds give it', async () => {
    t.mock.enqueue(reply.text('Hello.'))
    // A model that takes images: read_image is offered only to those.
    const result = await t.headless(['--model', 'deepseek-v4-flash-vision-exp', 'Say hello.'])
    expect(result.code, result.stderr).toBe(0)
    const tools: { function: { name: string; parameters: JsonSchema } }[] = t.mock.requests[0]?.body.tools ?? []
    const registered = new Map(tools.map((tool) => [tool.function.name, tool.function.parameters]))

    const unknown = [...registered.keys()].filter((name) => !catalog[name] && !DSH_ONLY.has(name))
    expect(unknown, 'tools the seeds do not define: rename them or add them to DSH_ONLY').toEqual([])

    for (const [name, parameters] of registered) {
      const entry = catalog[name]
      if (!entry) continue
      const pending = PENDING[name]
      if (pending) {
        for (const key of pending.parameters)
          expect(parameters.properties, `${name}.${key} arrived: delete its PENDING entry`).not.toHaveProperty(key)
      }
      expect(shape(parameters), `${name} (${entry.package}) drifted from the seeds' schema`).toEqual(
        shape(withoutPending(name, entry.parameters)),
      )
    }

    // Every seed tool is registered: a catalog entry without a tool fails here.
    const missing = Object.keys(catalog)
      .filter((name) => !registered.has(name))
      .sort()
    expect(missing).toEqual([])
  })
})
