import path from 'node:path'
import type { ToolCallContent, ToolCallLocation, ToolKind } from '@agentclientprotocol/sdk'
import type { ContentBlock } from '@dsh/llm'
import { type CallArguments, callTarget, describeToolCall, parseCallArguments } from '@dsh/tools'

export const TOOL_KINDS = ['read', 'edit', 'delete', 'move', 'search', 'execute', 'think', 'fetch', 'switch_mode', 'other'] as const

/** The ACP kind of the tools dsh ships; `config.toolKinds` adds to and overrides these. */
export const DEFAULT_TOOL_KINDS: Readonly<Record<string, ToolKind>> = {
  read: 'read',
  ls: 'read',
  glob: 'search',
  grep: 'search',
  write: 'edit',
  edit: 'edit',
  bash: 'execute',
  job_output: 'read',
  job_list: 'read',
  job_kill: 'execute',
  terminal_create: 'execute',
  terminal_send: 'execute',
  terminal_read: 'read',
  terminal_kill: 'execute',
  terminal_list: 'read',
  web_fetch: 'fetch',
  web_search: 'fetch',
  todo_write: 'think',
  task: 'think',
  exit_plan_mode: 'switch_mode',
}

/** How a tool call looks to the client: everything but its status and outcome. */
export interface ToolCallView {
  title: string
  kind: ToolKind
  locations: ToolCallLocation[]
  content: ToolCallContent[]
  rawInput: unknown
}

/** Renders tool calls for one session: paths resolve against its workspace; `kinds` maps tool names to ACP kinds. */
export class ToolViews {
  constructor(
    private readonly cwd: string,
    private readonly kinds: Readonly<Record<string, ToolKind>>,
  ) {}

  kindOf(name: string): ToolKind {
    return this.kinds[name] ?? 'other'
  }

  /** The absolute path of a path argument. */
  private absolute(given: string): string {
    return path.resolve(this.cwd, given)
  }

  view(name: string, rawArguments: string): ToolCallView {
    const args = parseCallArguments(rawArguments)
    const kind = this.kindOf(name)
    const rawInput = args ?? rawArguments
    const title = describeToolCall(name, args, this.cwd)
    if (!args) return { title, kind, locations: [], content: [], rawInput }
    const target = callTarget(args)
    const locations: ToolCallLocation[] = target ? [{ path: this.absolute(target) }] : []
    return { title, kind, locations, content: this.callContent(name, args, target), rawInput }
  }

  /** What a call shows before it runs: the diff of a file change. */
  private callContent(name: string, args: CallArguments, target: string | undefined): ToolCallContent[] {
    if (!target) return []
    if (name === 'edit' && typeof args.old_string === 'string' && typeof args.new_string === 'string') {
      return [{ type: 'diff', path: this.absolute(target), oldText: args.old_string, newText: args.new_string }]
    }
    if (name === 'write' && typeof args.content === 'string') {
      return [{ type: 'diff', path: this.absolute(target), oldText: null, newText: args.content }]
    }
    return []
  }

  /**
   * What a finished call shows. A successful edit or write keeps its diff
   * (undefined: leave the content as it is); command and file output is fenced.
   */
  resultContent(name: string, blocks: readonly ContentBlock[], failed: boolean): ToolCallContent[] | undefined {
    if (!failed && (name === 'edit' || name === 'write')) return undefined
    const out: ToolCallContent[] = []
    const texts = blocks.filter((b) => b.type === 'text').map((b) => (b as { text: string }).text)
    const joined = texts.join('\n')
    if (joined.length > 0) {
      const fenced = !failed && (name === 'bash' || name === 'read' || name.startsWith('terminal_') || name === 'job_output')
      out.push({ type: 'content', content: { type: 'text', text: fenced ? fence(joined, name === 'read' ? '' : 'console') : joined } })
    }
    for (const block of blocks) {
      if (block.type === 'image') out.push({ type: 'content', content: { type: 'image', mimeType: block.mediaType, data: block.data } })
    }
    return out
  }
}

/** A Markdown code block around `body`, with a fence longer than any run of backticks inside it. */
export function fence(body: string, language: string): string {
  const longest = Math.max(0, ...Array.from(body.matchAll(/`+/g), (m) => m[0].length))
  const marks = '`'.repeat(Math.max(3, longest + 1))
  return `${marks}${language}\n${body.replace(/\n$/, '')}\n${marks}`
}
