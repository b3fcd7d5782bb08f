import type { ToolCallContent, ToolCallLocation, ToolKind } from '@agentclientprotocol/sdk'
import type { ContentBlock } from '@dsh/llm'
import {
  diagnosticCounts,
  formatDiagnostic,
  parseCallArguments,
  resultDiagnostics,
  type ToolCallPresentation,
  type ToolRuntime,
} from '@dsh/tools'

/** How a tool call looks to the client: everything but its status and outcome. */
export interface ToolCallView {
  title: string
  kind: ToolKind
  locations: ToolCallLocation[]
  content: ToolCallContent[]
  rawInput: unknown
}

/**
 * Renders tool calls for one session from each tool's own presentation
 * (`ctx.tools.present`): paths resolve against the session's workspace;
 * `kinds` (the `toolKinds` config) overrides the ACP kind of tools by name.
 */
export class ToolViews {
  constructor(
    private readonly cwd: string,
    private readonly tools: Pick<ToolRuntime, 'present'>,
    private readonly kinds: Readonly<Record<string, ToolKind>> = {},
  ) {}

  private present(name: string, rawArguments: string): ToolCallPresentation {
    return this.tools.present({ name, arguments: rawArguments }, this.cwd)
  }

  view(name: string, rawArguments: string): ToolCallView {
    const shown = this.present(name, rawArguments)
    const args = parseCallArguments(rawArguments)
    const { change } = shown
    return {
      title: shown.title,
      kind: this.kinds[name] ?? shown.kind,
      locations: shown.locations.map((path) => ({ path })),
      // What a call shows before it runs: the diff of a file change.
      content: change ? [{ type: 'diff', path: change.path, oldText: change.oldText, newText: change.newText }] : [],
      rawInput: args ?? rawArguments,
    }
  }

  /**
   * What a finished call shows. A successful call of a `diff` tool keeps its
   * diff (undefined: leave the content as it is), unless its result's `meta`
   * carries the `oldText` it replaced (`write` over a file): then the diff is
   * sent again with that old text. The output of `terminal` and `read` tools
   * is fenced.
   */
  resultContent(
    name: string,
    blocks: readonly ContentBlock[],
    failed: boolean,
    call: { arguments: string; meta?: unknown } = { arguments: '' },
  ): ToolCallContent[] | undefined {
    const { view } = this.present(name, '')
    if (!failed && view === 'diff') {
      const oldText = (call.meta as { oldText?: unknown } | undefined)?.oldText
      const { change } = this.present(name, call.arguments)
      const diff: ToolCallContent[] | undefined =
        typeof oldText === 'string' && change
          ? [{ type: 'diff', path: change.path, oldText, newText: change.newText }]
          : undefined
      // The language server's findings go under the diff (content replaces the whole list).
      const found = resultDiagnostics(call.meta)
      if (!found?.length) return diff
      const lines = found.map((item) => formatDiagnostic(item, this.cwd))
      const text = `Language server: ${diagnosticCounts(found)}\n${lines.join('\n')}`
      return [
        ...(diff ?? this.view(name, call.arguments).content),
        { type: 'content', content: { type: 'text', text } },
      ]
    }
    const out: ToolCallContent[] = []
    const texts = blocks.filter((b) => b.type === 'text').map((b) => (b as { text: string }).text)
    const joined = texts.join('\n')
    if (joined.length > 0) {
      const fenced = !failed && (view === 'terminal' || view === 'read')
      out.push({
        type: 'content',
        content: { type: 'text', text: fenced ? fence(joined, view === 'read' ? '' : 'console') : joined },
      })
    }
    for (const block of blocks) {
      if (block.type === 'image')
        out.push({ type: 'content', content: { type: 'image', mimeType: block.mediaType, data: block.data } })
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
