import type { Context, JsonValue } from '@dsh/cordis'
import type { Subprocess } from '@dsh/subprocess'
import { ToolError, type ToolOutput } from '@dsh/tools'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import type { Tool } from '@modelcontextprotocol/sdk/types.js'
import { z } from 'zod'
import type { McpConfig, McpServerConfig } from './config.ts'
import { mcpPresentation, parseTool, toolName, toOutput } from './convert.ts'
import { loadSdk, type Sdk } from './sdk.ts'

export type McpServerStatus = 'connecting' | 'connected' | 'reconnecting' | 'failed' | 'closed'

export interface McpServerInfo {
  name: string
  status: McpServerStatus
  /** The dsh names of the tools registered now. */
  tools: string[]
  /** The last failure, with the end of the server's stderr. */
  error?: string
}

type Settings = Omit<McpConfig, 'servers'>

const ToolPage = z.object({ tools: z.array(z.unknown()), nextCursor: z.string().optional() })
const MAX_PAGES = 100

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

/**
 * A server's environment: the one the subprocess environment policy builds,
 * plus the server's own `env`. The SDK adds a few of dsh's variables (HOME,
 * PATH, USER, ...) underneath whatever it is given; those the policy dropped
 * are masked as unset, which `spawn` skips.
 */
function serverEnvironment(
  subprocess: Subprocess,
  sdk: Sdk,
  extra: Record<string, string> | undefined,
): Record<string, string> {
  const env: Record<string, string | undefined> = subprocess.environment(extra)
  for (const name of sdk.DEFAULT_INHERITED_ENV_VARS) if (!(name in env)) env[name] = undefined
  return env as Record<string, string>
}

/**
 * One MCP server: connects, registers its tools on the owner's `ctx.tools`,
 * and reconnects with exponential backoff when it fails to start or stops.
 * Its tools are removed while it is down and registered again when it is back.
 */
export class McpConnection {
  status: McpServerStatus = 'connecting'
  error: string | undefined
  /** Settles when the first attempt has succeeded or failed. */
  readonly firstAttempt: Promise<void>
  private settleFirst!: () => void
  private client: Client | undefined
  private sdk: Sdk | undefined
  private attempt: { client: Client; done: Promise<void> } | undefined
  private registered: Array<() => void> = []
  private toolNames: string[] = []
  private failures = 0
  private timer: NodeJS.Timeout | undefined
  private closed = false
  private stderrTail = ''
  private readonly logger: ReturnType<Context['logger']>

  /** `home` provides the services; the tools belong to `owner` and go with it. */
  constructor(
    private readonly home: Context,
    private readonly owner: Context,
    readonly name: string,
    private readonly server: McpServerConfig,
    private readonly settings: Settings,
  ) {
    this.logger = home.logger('mcp')
    this.firstAttempt = new Promise((resolve) => (this.settleFirst = resolve))
  }

  info(): McpServerInfo {
    return {
      name: this.name,
      status: this.status,
      tools: [...this.toolNames],
      ...(this.error ? { error: this.error } : {}),
    }
  }

  start(): void {
    void this.connect().finally(() => this.settleFirst())
  }

  /** Stops for good: no more reconnects, tools removed, the server process ended. */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.status = 'closed'
    clearTimeout(this.timer)
    this.settleFirst()
    this.unregister()
    const pending = this.attempt
    const client = this.client
    this.client = undefined
    await Promise.all([pending?.client.close().catch(() => {}), client?.close().catch(() => {})])
    await pending?.done
  }

  /** Runs one call of a raw tool name; failures become tool errors naming the server. */
  async call(tool: string, args: Record<string, unknown>, signal: AbortSignal): Promise<ToolOutput> {
    const client = this.client
    if (!client) {
      throw new ToolError(
        'MCP_UNAVAILABLE',
        `MCP server "${this.name}" is not connected (${this.status}), so "${tool}" cannot run now`,
      )
    }
    try {
      const result = await client.callTool({ name: tool, arguments: args }, undefined, {
        signal,
        timeout: this.settings.toolCallTimeoutMs,
      })
      return toOutput(result as Parameters<typeof toOutput>[0], { server: this.name, tool })
    } catch (error) {
      if (signal.aborted || !this.sdk) throw error
      const { ErrorCode, McpError } = this.sdk
      if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
        throw new ToolError(
          'TIMEOUT',
          `MCP server "${this.name}" did not answer the call to "${tool}" within ${this.settings.toolCallTimeoutMs}ms`,
        )
      }
      const closed = error instanceof McpError && error.code === ErrorCode.ConnectionClosed
      // A failed HTTP request is how a streamable HTTP server shows it is gone.
      if (closed || (!(error instanceof McpError) && 'url' in this.server)) {
        this.lost(client)
        throw new ToolError(
          'MCP_UNAVAILABLE',
          `the connection to MCP server "${this.name}" failed during the call to "${tool}": ${errorText(error)}`,
        )
      }
      throw new ToolError('MCP_ERROR', `the call to "${tool}" on MCP server "${this.name}" failed: ${errorText(error)}`)
    }
  }

  private async transport(sdk: Sdk): Promise<Transport> {
    const server = this.server
    if ('url' in server) {
      // Loaded on demand: only HTTP servers need it (and its SSE parser).
      const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js')
      return new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: { ...server.headers } } })
    }
    const transport = new sdk.StdioClientTransport({
      command: server.command,
      args: server.args ?? [],
      env: serverEnvironment(this.home.subprocess, sdk, server.env),
      ...(server.cwd ? { cwd: server.cwd } : {}),
      stderr: 'pipe',
    })
    this.stderrTail = ''
    transport.stderr?.on('data', (chunk: Buffer | string) => {
      const text = chunk.toString()
      this.logger.debug('server "%s" stderr: %s', this.name, text.trimEnd())
      this.stderrTail = (this.stderrTail + text).slice(-this.settings.stderrTailChars)
    })
    return transport
  }

  private async connect(): Promise<void> {
    if (this.closed) return
    let sdk: Sdk
    try {
      sdk = this.sdk ??= await loadSdk()
    } catch (error) {
      this.failed(new Error(`the MCP SDK could not be loaded: ${errorText(error)}`))
      return
    }
    if (this.closed) return
    const client = new sdk.Client({ name: 'dsh', version: '0.1.0' })
    let finish!: () => void
    this.attempt = { client, done: new Promise((resolve) => (finish = resolve)) }
    try {
      await client.connect(await this.transport(sdk), { timeout: this.settings.startupTimeoutMs })
      const tools = await this.listTools(client, sdk)
      if (this.closed) {
        await client.close().catch(() => {})
        return
      }
      this.client = client
      client.onclose = () => this.lost(client)
      client.setNotificationHandler(sdk.ToolListChangedNotificationSchema, () => void this.resync(client, sdk))
      const wasDown = this.status === 'reconnecting'
      client.onerror = (error) => this.logger.debug('server "%s": %s', this.name, errorText(error))
      this.register(tools)
      this.status = 'connected'
      this.error = undefined
      this.failures = 0
      if (wasDown) this.logger.info('server "%s" is up with %d tools', this.name, this.toolNames.length)
    } catch (error) {
      await client.close().catch(() => {})
      if (!this.closed) this.failed(error)
    } finally {
      this.attempt = undefined
      finish()
    }
  }

  private async listTools(client: Client, sdk: Sdk): Promise<Tool[]> {
    const tools: Tool[] = []
    let cursor: string | undefined
    for (let page = 0; page < MAX_PAGES; page++) {
      // Parsed loosely, so one malformed tool does not cost the others.
      const result = await client.request({ method: 'tools/list', params: cursor ? { cursor } : {} }, ToolPage, {
        timeout: this.settings.startupTimeoutMs,
      })
      for (const raw of result.tools) {
        const parsed = parseTool(raw, sdk.ToolSchema)
        if ('tool' in parsed) tools.push(parsed.tool)
        else
          this.logger.warn(
            'server "%s": tool "%s" skipped, its definition is malformed: %s',
            this.name,
            parsed.name,
            parsed.problem,
          )
      }
      cursor = result.nextCursor
      if (!cursor) break
    }
    return tools
  }

  private register(tools: Tool[]): void {
    this.unregister()
    for (const tool of tools) {
      const name = toolName(this.name, tool.name)
      if (this.toolNames.includes(name)) {
        this.logger.warn('server "%s": tool "%s" skipped, the server lists it twice', this.name, tool.name)
        continue
      }
      try {
        this.registered.push(
          this.home.tools.register(this.owner, {
            name,
            description: tool.description?.trim() || `Tool "${tool.name}" of MCP server "${this.name}".`,
            // The server validates the arguments against its own schema; the model is shown that schema as is.
            parameters: z.looseObject({}),
            inputSchema: tool.inputSchema as Record<string, JsonValue>,
            timeoutMs: this.settings.toolCallTimeoutMs,
            presentation: mcpPresentation(this.name, tool),
            // The server runs outside dsh's sandbox and says nothing trustworthy about its effects: outside every preset but danger-full-access.
            access: () => ({
              kind: 'other',
              escalated: true,
              summary: `tool "${tool.name}" of MCP server "${this.name}", which runs outside the sandbox`,
            }),
            execute: (args, run) => this.call(tool.name, args, run.signal),
          }),
        )
        this.toolNames.push(name)
      } catch (error) {
        this.logger.warn('server "%s": tool "%s" skipped: %s', this.name, tool.name, errorText(error))
      }
    }
  }

  private unregister(): void {
    for (const off of this.registered.splice(0)) off()
    this.toolNames = []
  }

  private async resync(client: Client, sdk: Sdk): Promise<void> {
    try {
      const tools = await this.listTools(client, sdk)
      if (this.client === client) this.register(tools)
    } catch (error) {
      this.logger.warn('server "%s": listing its changed tools failed: %s', this.name, errorText(error))
    }
  }

  /** The server went away after a good start: its tools go, and it is reconnected. */
  private lost(client: Client): void {
    if (this.closed || this.client !== client) return
    this.client = undefined
    void client.close().catch(() => {})
    this.unregister()
    this.status = 'reconnecting'
    const tail = this.stderrTail.trim()
    this.error = `the connection closed${tail ? `; stderr: ${tail}` : ''}`
    this.logger.warn('server "%s" stopped (%s); its tools are gone until it reconnects', this.name, this.error)
    this.schedule()
  }

  private failed(error: unknown): void {
    this.failures++
    const tail = this.stderrTail.trim()
    this.error = `${errorText(error)}${tail ? `; stderr: ${tail}` : ''}`
    const { maxAttempts } = this.settings.reconnect
    if (this.failures > maxAttempts) {
      this.status = 'failed'
      this.logger.warn(
        'server "%s" failed to start (%s); giving up after %d attempts',
        this.name,
        this.error,
        this.failures,
      )
      return
    }
    const delay = this.schedule()
    if (this.failures === 1)
      this.logger.warn('server "%s" failed to start (%s); retrying in %dms', this.name, this.error, delay)
    else this.logger.debug('server "%s" failed again (%s); retrying in %dms', this.name, this.error, delay)
  }

  private schedule(): number {
    this.status = 'reconnecting'
    const { initialDelayMs, maxDelayMs } = this.settings.reconnect
    const delay = Math.min(initialDelayMs * 2 ** Math.max(0, this.failures - 1), maxDelayMs)
    clearTimeout(this.timer)
    this.timer = setTimeout(() => void this.connect(), delay)
    this.timer.unref()
    return delay
  }
}
