import type { JsonValue } from '@dsh/cordis'
import { z } from 'zod'
import { type ParameterSchema, TOOL_KINDS, TOOL_VIEWS, type ToolDefinition } from './types.ts'

const NAME = /^[A-Za-z0-9_-]{1,64}$/

/**
 * Declares a tool with its argument types inferred from the zod schema.
 * Checks the definition at once, so a mistake fails where the tool is written.
 */
export function defineTool<S extends ParameterSchema>(definition: ToolDefinition<S>): ToolDefinition<S> {
  checkDefinition(definition)
  return definition
}

/** Throws an error naming the tool when a definition is malformed. */
export function checkDefinition(definition: ToolDefinition<ParameterSchema>): void {
  const label = typeof definition?.name === 'string' ? `tool "${definition.name}"` : 'tool'
  if (typeof definition?.name !== 'string' || !NAME.test(definition.name)) {
    throw new Error(`${label}: the name must be 1 to 64 letters, digits, "_" or "-"`)
  }
  if (typeof definition.description !== 'string' || definition.description.trim() === '') {
    throw new Error(`${label}: the description is empty`)
  }
  if (!isObjectSchema(definition.parameters)) {
    throw new Error(`${label}: parameters must be a zod object schema (z.object({...}))`)
  }
  if (definition.inputSchema !== undefined) checkInputSchema(label, definition.inputSchema)
  if (typeof definition.execute !== 'function') throw new Error(`${label}: execute is not a function`)
  if (definition.presentation !== undefined) checkPresentation(label, definition.presentation)
  const { timeoutMs } = definition
  if (timeoutMs !== undefined && !(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
    throw new Error(`${label}: timeoutMs must be a positive number of milliseconds`)
  }
}

function checkPresentation(label: string, presentation: NonNullable<ToolDefinition['presentation']>): void {
  if (presentation === null || typeof presentation !== 'object')
    throw new Error(`${label}: presentation must be an object`)
  if (!TOOL_KINDS.includes(presentation.kind)) {
    throw new Error(
      `${label}: presentation.kind ${JSON.stringify(presentation.kind)} is not one of ${TOOL_KINDS.join(', ')}`,
    )
  }
  if (!TOOL_VIEWS.includes(presentation.view)) {
    throw new Error(
      `${label}: presentation.view ${JSON.stringify(presentation.view)} is not one of ${TOOL_VIEWS.join(', ')}`,
    )
  }
  for (const key of ['title', 'locations', 'change', 'command'] as const) {
    if (presentation[key] !== undefined && typeof presentation[key] !== 'function')
      throw new Error(`${label}: presentation.${key} is not a function`)
  }
}

function checkInputSchema(label: string, schema: unknown): void {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) {
    throw new Error(`${label}: inputSchema must be a JSON Schema object`)
  }
  if ((schema as { type?: unknown }).type !== 'object') {
    throw new Error(
      `${label}: inputSchema must describe an object (type: "object"), got type ${JSON.stringify((schema as { type?: unknown }).type)}`,
    )
  }
  try {
    JSON.stringify(schema)
  } catch (error) {
    throw new Error(`${label}: inputSchema is not plain JSON: ${errorMessage(error)}`)
  }
}

function isObjectSchema(value: unknown): value is ParameterSchema {
  const def = (value as { _zod?: { def?: { type?: unknown } } } | undefined)?._zod?.def
  return def?.type === 'object'
}

/**
 * The JSON Schema the model is shown for a tool: its `inputSchema` as is,
 * else its parameter schema on the input side (fields with defaults are
 * optional), without the `$schema` marker. Throws, naming the tool, for a
 * type JSON Schema cannot express. Each call returns a fresh copy; the
 * conversion itself runs once per schema object (see `toolParameters`).
 */
export function parametersJsonSchema(definition: ToolDefinition<ParameterSchema>): Record<string, JsonValue> {
  if (definition.inputSchema !== undefined)
    return JSON.parse(JSON.stringify(definition.inputSchema)) as Record<string, JsonValue>
  const conversion = convert(definition.parameters)
  if ('failure' in conversion) {
    throw new Error(
      `tool "${definition.name}": its parameters cannot be expressed as JSON Schema: ${conversion.failure}`,
    )
  }
  return JSON.parse(conversion.json) as Record<string, JsonValue>
}

/** A parameter schema's JSON Schema as text, or why it has none. */
type Conversion = { readonly json: string } | { readonly failure: string }

/** Conversions by schema object: a schema shared by several definitions or registrations is converted once. */
const conversions = new WeakMap<ParameterSchema, Conversion>()

function convert(schema: ParameterSchema): Conversion {
  let conversion = conversions.get(schema)
  if (conversion !== undefined) return conversion
  try {
    const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io: 'input' }) as Record<string, unknown>
    conversion = { json: JSON.stringify(rest) }
  } catch (error) {
    conversion = { failure: errorMessage(error) }
  }
  conversions.set(schema, conversion)
  return conversion
}

/**
 * Returns `schema` after converting it to the JSON Schema the model will be
 * shown and keeping the result, so a tool package that calls this at module
 * scope pays for the conversion when the module is evaluated (for dsh, while
 * the start-up snapshot is built), not when the tool is registered. A schema
 * JSON Schema cannot express is not refused here: registering a tool with it
 * throws, naming the tool.
 */
export function toolParameters<S extends ParameterSchema>(schema: S): S {
  convert(schema)
  return schema
}

/**
 * `toolParameters` for a schema shaped by configuration: `build(...values)`
 * runs once per list of values (the config values the schema depends on,
 * e.g. a limit), and the same schema object comes back for equal values.
 * Call it at module scope with the default config's values so a default
 * start converts nothing.
 */
export function toolParametersBy<V extends readonly (string | number | boolean)[], S extends ParameterSchema>(
  build: (...values: V) => S,
): (...values: V) => S {
  const built = new Map<string, S>()
  return (...values) => {
    const key = JSON.stringify(values)
    let schema = built.get(key)
    if (schema === undefined) {
      schema = toolParameters(build(...values))
      built.set(key, schema)
    }
    return schema
  }
}

export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message
  return String(error)
}
