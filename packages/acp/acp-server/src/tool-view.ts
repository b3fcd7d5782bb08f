import type { ToolCallContent, ToolCallLocation, ToolKind } from '@agentclientprotocol/sdk'
import type { ContentBlock } from '@dsh/llm'
import {
  codeFence,
  type FileChange,
  parseCallArguments,
  presentResult,
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
      content: change ? [diffOf(change)] : [],
      rawInput: args ?? rawArguments,
    }
  }

  /**
   * What a finished call shows (`presentResult` of `@dsh/tools`). A
   * successful call of a `diff` tool keeps its diff (undefined: leave the
   * content as it is), unless its result's `meta` carries the `oldText` it
   * replaced (`write` over a file): then the diff is sent again with that old
   * text. Output the view marks as code (`terminal` and `read` tools) is fenced.
   */
  resultContent(
    name: string,
    blocks: readonly ContentBlock[],
    failed: boolean,
    call: { arguments: string; meta?: unknown } = { arguments: '' },
  ): ToolCallContent[] | undefined {
    const shown = this.present(name, call.arguments)
    const result = presentResult(shown, { content: blocks, failed, meta: call.meta }, this.cwd)
    const text = (text: string): ToolCallContent => ({ type: 'content', content: { type: 'text', text } })
    if (!failed && shown.view === 'diff') {
      const diff = result.change ? [diffOf(result.change)] : undefined
      // The language server's findings go under the diff (content replaces the whole list).
      if (!result.diagnostics) return diff
      return [...(diff ?? this.view(name, call.arguments).content), text(result.diagnostics)]
    }
    const out: ToolCallContent[] = []
    if (result.text) out.push(text(result.code === undefined ? result.text : codeFence(result.text, result.code)))
    for (const { mediaType, data } of result.images)
      out.push({ type: 'content', content: { type: 'image', mimeType: mediaType, data } })
    return out
  }
}

const diffOf = ({ path, oldText, newText }: FileChange): ToolCallContent => ({ type: 'diff', path, oldText, newText })
