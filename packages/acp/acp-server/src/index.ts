import { Readable, Writable } from 'node:stream'
import { ndJsonStream } from '@agentclientprotocol/sdk'
import type {} from '@dsh/cmdline'
import type {} from '@dsh/conversations'
import type { Context } from '@dsh/cordis'
import type {} from '@dsh/fs'
import type {} from '@dsh/llm'
import type {} from '@dsh/permission'
import { oversizedLineGuard, protocolStdio } from '@dsh/sdk-protocol'
import { errorMessage } from '@dsh/tools'
import manifest from '../package.json' with { type: 'json' }
import type { AcpServerConfig } from './config.ts'
import { AcpServer, OVERSIZED_METHOD } from './server.ts'

export { type AcpServerConfig, Config } from './config.ts'
export { mcpConfig } from './mcp.ts'
export { type PromptLimits, promptMessage } from './prompt.ts'
export { AcpServer, OVERSIZED_METHOD } from './server.ts'
export { ToolViews } from './tool-view.ts'
export { SessionUpdates } from './updates.ts'

export const name = 'acp-server'
export const inject = ['acpAppStartup', 'agents', 'sessions', 'conversations', 'permission', 'tools', 'appExit']

/**
 * Serves the Agent Client Protocol on stdin and stdout (nothing else may
 * write to stdout; a client that vanishes mid-write closes the connection
 * instead of crashing the process). When the client goes away (stdin
 * closes), running turns are cancelled, sessions saved, and the app exits 0.
 */
export function apply(ctx: Context, config: AcpServerConfig) {
  let disposing = false
  const io = protocolStdio(false)
  const input = (Readable.toWeb(io.input as Readable) as ReadableStream<Uint8Array>).pipeThrough(
    oversizedLineGuard(config.maxMessageBytes, OVERSIZED_METHOD),
  )
  const output = Writable.toWeb(io.output as Writable) as WritableStream<Uint8Array>
  const stream = ndJsonStream(output, input, { maxMessageBytes: config.maxMessageBytes + 4096 })
  const server = new AcpServer(ctx, config, stream, manifest.version)
  ctx.effect(
    () => () => {
      disposing = true
      io.release()
      server.close()
    },
    'acp connection',
  )
  void server.closed.then(async () => {
    if (disposing) return
    try {
      await server.shutdown()
    } catch (error) {
      ctx.logger.warn('acp: shutting the sessions down failed: %s', errorMessage(error))
    }
    ctx.appExit(0)
  })
}
