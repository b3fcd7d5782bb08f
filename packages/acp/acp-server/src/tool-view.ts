import type { ToolCall, ToolCallContent, ToolKind } from '@agentclientprotocol/sdk'
import type { ContentBlock } from '@dsh/llm'
import {
  codeFence,
  type FileChange,
  parseCallArguments,
  presentResult,
  type ToolCallPresentation,
  type ToolRuntime,
} from '@dsh/tools'

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

  /** A call as ACP's `ToolCall`, `pending`: what `tool_call` announces and a permission request shows. */
  toolCall(callId: string, name: string, rawArguments: string): ToolCall {
    const shown = this.present(name, rawArguments)
    return {
      toolCallId: callId,
      title: shown.title,
      kind: this.kinds[name] ?? shown.kind,
      status: 'pending',
      ...(shown.locations.length ? { locations: shown.locations.map((path) => ({ path })) } : {}),
      // What a call shows before it runs: the diff of a file change.
      ...(shown.change ? { content: [diffOf(shown.change)] } : {}),
      rawInput: parseCallArguments(rawArguments) ?? rawArguments,
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
      return [...(diff ?? (shown.change ? [diffOf(shown.change)] : [])), text(result.diagnostics)]
    }
    const out: ToolCallContent[] = []
    if (result.text) out.push(text(result.code === undefined ? result.text : codeFence(result.text, result.code)))
    for (const { mediaType, data } of result.images)
      out.push({ type: 'content', content: { type: 'image', mimeType: mediaType, data } })
    return out
  }
}

const diffOf = ({ path, oldText, newText }: FileChange): ToolCallContent => ({ type: 'diff', path, oldText, newText })
