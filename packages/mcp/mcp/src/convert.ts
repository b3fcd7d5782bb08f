import { createHash } from 'node:crypto'
import type { ContentBlock } from '@dsh/llm'
import type { ToolOutput, ToolPresentation } from '@dsh/tools'
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js'
import type { Sdk } from './sdk.ts'

const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/

/**
 * The dsh name of a server's tool: `mcp__<server>__<tool>`. A raw name with
 * other characters, or too long, is cleaned and cut, and a hash of the
 * server and raw name keeps it unique.
 */
export function toolName(server: string, raw: string): string {
  const plain = `mcp__${server}__${raw}`
  if (TOOL_NAME.test(plain)) return plain
  const hash = createHash('sha256').update(`${server}\u0000${raw}`).digest('hex').slice(0, 12)
  return `${plain.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64 - hash.length - 1)}_${hash}`
}

/**
 * How an MCP tool's calls show: the server's own annotations where it gives
 * them (a read-only tool reads, or fetches when it reaches the open world; a
 * destructive one deletes), else generic. The title is the tool's display
 * title (or name) and the server. Annotations are hints from an untrusted
 * server: they pick an icon and a title, never a permission.
 */
export function mcpPresentation(server: string, tool: Pick<Tool, 'name' | 'title' | 'annotations'>): ToolPresentation {
  const hints = tool.annotations ?? {}
  const label = (hints.title ?? tool.title ?? tool.name).replace(/\s+/g, ' ').trim() || tool.name
  const kind =
    hints.readOnlyHint === true
      ? hints.openWorldHint === true
        ? 'fetch'
        : 'read'
      : hints.destructiveHint === true
        ? 'delete'
        : 'other'
  return { kind, view: 'generic', title: () => `${label} (${server})` }
}

/** A tool from a `tools/list` page, or why it cannot be used. */
export function parseTool(raw: unknown, schema: Sdk['ToolSchema']): { tool: Tool } | { name: string; problem: string } {
  const parsed = schema.safeParse(raw)
  if (parsed.success) return { tool: parsed.data }
  const name =
    typeof (raw as { name?: unknown } | null)?.name === 'string' ? (raw as { name: string }).name : '(unnamed)'
  const problem = parsed.error.issues
    .slice(0, 3)
    .map((issue) => `${issue.path.length ? issue.path.join('.') : '(tool)'}: ${issue.message}`)
    .join('; ')
  return { name, problem }
}

/** What the model reads from an MCP tool result: text as text, images as image blocks, the rest described. */
export function toOutput(result: CallToolResult, meta: { server: string; tool: string }): ToolOutput {
  const content: ContentBlock[] = []
  for (const block of result.content ?? []) {
    switch (block.type) {
      case 'text':
        content.push({ type: 'text', text: block.text })
        break
      case 'image':
        content.push({ type: 'image', mediaType: block.mimeType, data: block.data })
        break
      case 'audio':
        content.push({
          type: 'text',
          text: `[audio (${block.mimeType}) left out: audio cannot be passed to the model]`,
        })
        break
      case 'resource_link':
        content.push({ type: 'text', text: `[resource ${block.name}: ${block.uri}]` })
        break
      case 'resource': {
        const { resource } = block
        if ('text' in resource && typeof resource.text === 'string') content.push({ type: 'text', text: resource.text })
        else
          content.push({
            type: 'text',
            text: `[binary resource ${resource.uri}${resource.mimeType ? ` (${resource.mimeType})` : ''} left out]`,
          })
        break
      }
      default:
        content.push({
          type: 'text',
          text: `[content of type ${JSON.stringify((block as { type?: unknown }).type)} left out]`,
        })
    }
  }
  if (content.length === 0 && result.structuredContent !== undefined)
    content.push({ type: 'text', text: JSON.stringify(result.structuredContent) })
  if (content.length === 0) content.push({ type: 'text', text: '(no output)' })
  if (result.isError !== true) return { content, meta }
  const [first, ...rest] = content
  const head: ContentBlock =
    first?.type === 'text'
      ? { type: 'text', text: `Error: ${first.text}` }
      : { type: 'text', text: 'Error: the MCP tool reported a failure.' }
  return {
    content: first?.type === 'text' ? [head, ...rest] : [head, ...content],
    isError: true,
    code: 'MCP_TOOL_ERROR',
    meta,
  }
}
