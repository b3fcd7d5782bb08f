import { readFileSync } from 'node:fs'
import { Readable, Writable } from 'node:stream'
import { ndJsonStream, type Stream } from '@agentclientprotocol/sdk'
import type { Context } from '@dsh/cordis'
import type {} from '@dsh/cmdline'
import type {} from '@dsh/conversations'
import type {} from '@dsh/fs'
import type {} from '@dsh/llm'
import type {} from '@dsh/permission'
import type { AcpServerConfig } from './config.ts'
import { oversizedLineGuard } from '@dsh/sdk-protocol'
import { AcpServer, OVERSIZED_METHOD } from './server.ts'

export { AcpServer, OVERSIZED_METHOD } from './server.ts'
export { Config, type AcpServerConfig } from './config.ts'
export { promptMessage, type PromptLimits } from './prompt.ts'
export { fence, ToolViews, type ToolCallView } from './tool-view.ts'
export { SessionUpdates } from './updates.ts'
export { mcpConfig } from './mcp.ts'

export const name = 'acp-server'
export const inject = ['acpAppStartup', 'agents', 'sessions', 'conversations', 'permission', 'tools', 'appExit']

const version = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string })
  .version

/** The ACP connection over this process's stdin and stdout. */
function stdio(maxMessageBytes: number): Stream {
  const input = (Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>).pipeThrough(
    oversizedLineGuard(maxMessageBytes, OVERSIZED_METHOD),
  )
  const output = Writable.toWeb(process.stdout) as WritableStream<Uint8Array>
  return ndJsonStream(output, input, { maxMessageBytes: maxMessageBytes + 4096 })
}

/**
 * Serves the Agent Client Protocol on stdin and stdout (nothing else may
 * write to stdout). When the client goes away (stdin closes), running turns
 * are cancelled, sessions saved, and the app exits 0.
 */
export function apply(ctx: Context, config: AcpServerConfig) {
  let disposing = false
  const server = new AcpServer(ctx, config, stdio(config.maxMessageBytes), version)
  ctx.effect(() => {
    // A client that vanishes mid-write must not crash the process: the connection closes instead.
    const onError = (error: Error) => ctx.logger.debug('acp: stdout failed: %s', error.message)
    process.stdout.on('error', onError)
    return () => {
      disposing = true
      process.stdout.off('error', onError)
      server.close()
    }
  }, 'acp connection')
  void server.closed.then(async () => {
    if (disposing) return
    try {
      await server.shutdown()
    } catch (error) {
      ctx.logger.warn(
        'acp: shutting the sessions down failed: %s',
        error instanceof Error ? error.message : String(error),
      )
    }
    ctx.appExit(0)
  })
}
