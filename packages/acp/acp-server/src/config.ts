import type { ToolKind } from '@agentclientprotocol/sdk'
import { Schema } from '@dsh/cordis'
import { TOOL_KINDS } from '@dsh/tools'

export interface AcpServerConfig {
  /** The largest prompt (text and image data) one `session/prompt` may carry, in bytes. */
  maxPromptBytes: number
  /** The longest input line (one JSON-RPC message) read, in bytes; a longer one is answered with an error and skipped. */
  maxMessageBytes: number
  /** ACP tool kinds by tool name, overriding the kinds the tools declare in their presentation. */
  toolKinds: Record<string, ToolKind>
  /** Sessions per `session/list` page. */
  listLimit: number
  /** At the end of input, how long to wait for the requests in flight (cancelled prompts) to be answered, in ms. */
  drainTimeoutMs: number
}

export const Config: Schema<AcpServerConfig> = Schema.object({
  maxPromptBytes: Schema.natural()
    .min(1)
    .default(2 * 1024 * 1024)
    .description(
      'The largest prompt (text plus image data) one session/prompt may carry, in bytes; a larger one is refused with -32602.',
    ),
  maxMessageBytes: Schema.natural()
    .min(1024)
    .default(32 * 1024 * 1024)
    .description(
      'The longest input line (one JSON-RPC message) the server reads, in bytes; a longer one is skipped and answered with -32600.',
    ),
  toolKinds: Schema.dict(Schema.union([...TOOL_KINDS]))
    .default({})
    .description(
      'ACP tool kinds (read, edit, delete, move, search, execute, think, fetch, switch_mode, other) by tool name, overriding the kind each tool declares in its presentation.',
    ),
  listLimit: Schema.natural()
    .min(1)
    .max(1000)
    .default(50)
    .description('Sessions per session/list page; the client follows nextCursor for more.'),
  drainTimeoutMs: Schema.natural()
    .default(3_000)
    .description(
      'When stdin closes: how long to wait for the requests in flight (prompts, whose turns are cancelled) to be answered before the connection closes, in milliseconds.',
    ),
})
