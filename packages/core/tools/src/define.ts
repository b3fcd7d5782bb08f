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
 * type JSON Schema cannot express.
 */
export function parametersJsonSchema(definition: ToolDefinition<ParameterSchema>): Record<string, JsonValue> {
  if (definition.inputSchema !== undefined)
    return JSON.parse(JSON.stringify(definition.inputSchema)) as Record<string, JsonValue>
  let schema: Record<string, unknown>
  try {
    schema = z.toJSONSchema(definition.parameters, { io: 'input' }) as Record<string, unknown>
  } catch (error) {
    throw new Error(
      `tool "${definition.name}": its parameters cannot be expressed as JSON Schema: ${errorMessage(error)}`,
    )
  }
  const { $schema: _ignored, ...rest } = schema
  return JSON.parse(JSON.stringify(rest)) as Record<string, JsonValue>
}

export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message
  return String(error)
}
