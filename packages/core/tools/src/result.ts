import type { ContentBlock } from '@dsh/llm'
import type { z } from 'zod'
import type { ToolErrorCode, ToolOutput, ToolResult } from './types.ts'

/** An error result: the model reads `Error: <message>`; hooks and UIs read `error.code`. */
export function failure(code: ToolErrorCode | (string & {}), message: string): ToolResult {
  return { content: [{ type: 'text', text: `Error: ${message}` }], isError: true, error: { code, message } }
}

/** Turns what a tool body returned into a result; a malformed value is reported, not passed on. */
export function fromOutput(toolName: string, output: ToolOutput): ToolResult {
  if (output === null || typeof output !== 'object') {
    return failure('TOOL_ERROR', `tool "${toolName}" returned no result`)
  }
  const content: ContentBlock[] | undefined =
    typeof output.content === 'string'
      ? [{ type: 'text', text: output.content }]
      : Array.isArray(output.content)
        ? output.content
        : undefined
  if (!content) return failure('TOOL_ERROR', `tool "${toolName}" returned a result without content`)
  const result: ToolResult = { content, isError: output.isError === true }
  if (result.isError) {
    const message = textOf(content).slice(0, 1000) || `tool "${toolName}" failed`
    result.error = { code: typeof output.code === 'string' && output.code ? output.code : 'TOOL_FAILED', message }
  }
  if (output.meta !== undefined) result.meta = output.meta
  return result
}

/** True when a value has the shape of a result (what a post-execute listener must return). */
export function isToolResult(value: unknown): value is ToolResult {
  if (value === null || typeof value !== 'object') return false
  const candidate = value as Partial<ToolResult>
  return (
    typeof candidate.isError === 'boolean' &&
    Array.isArray(candidate.content) &&
    candidate.content.every((block) => block !== null && typeof block === 'object' && typeof block.type === 'string')
  )
}

export function textOf(content: readonly ContentBlock[]): string {
  return content
    .filter((block): block is Extract<ContentBlock, { type: 'text' }> => block.type === 'text')
    .map((block) => block.text)
    .join('\n')
}

/**
 * Keeps at most `maxChars` characters of text across the text blocks, in
 * order, and notes how much was dropped. Other blocks pass through.
 */
export function capResult(result: ToolResult, maxChars: number): ToolResult {
  const total = result.content.reduce((sum, block) => sum + (block.type === 'text' ? block.text.length : 0), 0)
  if (total <= maxChars) return result
  let budget = maxChars
  const content: ContentBlock[] = []
  for (const block of result.content) {
    if (block.type !== 'text') {
      content.push(block)
      continue
    }
    if (budget <= 0) continue
    const kept = block.text.slice(0, budget)
    budget -= kept.length
    content.push({ type: 'text', text: kept })
  }
  const dropped = total - maxChars
  content.push({
    type: 'text',
    text: `\n[output truncated: ${dropped} of ${total} characters dropped; the limit is ${maxChars}. Narrow the request to see the rest.]`,
  })
  return { ...result, content }
}

/** A readable list of validation problems, one per line, each with the path of the offending field. */
export function formatIssues(issues: readonly z.core.$ZodIssue[]): string {
  return issues
    .map((issue) => {
      const where = issue.path.length
        ? issue.path
            .map((key) => (typeof key === 'number' ? `[${key}]` : String(key)))
            .join('.')
            .replace(/\.\[/g, '[')
        : '(arguments)'
      return `  - ${where}: ${issue.message}`
    })
    .join('\n')
}

/** Freezes a plain JSON-like value all the way down. */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key])
  }
  return value
}
