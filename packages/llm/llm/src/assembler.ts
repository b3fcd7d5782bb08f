import type { ContentBlock, FinishReason, LlmFailure, StreamChunk, TokenUsage, ToolCallId } from './types.ts'

type Draft =
  | { type: 'text'; text: string }
  | { type: 'reasoning'; text: string }
  | { type: 'tool-call'; id: string; name: string; arguments: string }

/** Builds the content blocks of a reply from its stream chunks. */
export class BlockAssembler {
  private readonly drafts = new Map<number, Draft>()
  usage: TokenUsage | undefined
  finish: { reason: FinishReason; failure?: LlmFailure } | undefined

  push(chunk: StreamChunk): void {
    switch (chunk.type) {
      case 'text-delta':
      case 'reasoning-delta': {
        const kind = chunk.type === 'text-delta' ? 'text' : 'reasoning'
        const draft = this.drafts.get(chunk.index)
        if (draft && draft.type === kind) draft.text += chunk.text
        else if (!draft) this.drafts.set(chunk.index, { type: kind, text: chunk.text })
        return
      }
      case 'tool-call-delta': {
        const draft = this.drafts.get(chunk.index)
        if (draft && draft.type === 'tool-call') {
          if (chunk.id) draft.id = chunk.id
          if (chunk.name && !draft.name) draft.name = chunk.name
          draft.arguments += chunk.argumentsDelta
        } else if (!draft) {
          this.drafts.set(chunk.index, {
            type: 'tool-call',
            id: chunk.id ?? '',
            name: chunk.name ?? '',
            arguments: chunk.argumentsDelta,
          })
        }
        return
      }
      case 'usage':
        this.usage = chunk.usage
        return
      case 'finish':
        this.finish = chunk.failure ? { reason: chunk.reason, failure: chunk.failure } : { reason: chunk.reason }
        return
    }
  }

  /** The blocks so far, in index order; empty text and reasoning blocks are left out. */
  blocks(): ContentBlock[] {
    const out: ContentBlock[] = []
    for (const [, draft] of [...this.drafts].sort((a, b) => a[0] - b[0])) {
      if (draft.type === 'tool-call')
        out.push({ type: 'tool-call', id: draft.id as ToolCallId, name: draft.name, arguments: draft.arguments })
      else if (draft.text.length > 0) out.push({ type: draft.type, text: draft.text })
    }
    return out
  }

  /** What the user saw of an interrupted reply: text and reasoning, no tool calls. */
  visibleBlocks(): ContentBlock[] {
    return this.blocks().filter((b) => b.type === 'text' || b.type === 'reasoning')
  }

  get hasOutput(): boolean {
    return this.drafts.size > 0
  }
}
