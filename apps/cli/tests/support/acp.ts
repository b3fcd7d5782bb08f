import { readFileSync } from 'node:fs'
import { Readable, Writable } from 'node:stream'
import * as acp from '@agentclientprotocol/sdk'
import { type DshProcess, type DshResult, startDsh } from '@dsh/testkit'
import { afterEach } from 'vitest'
import type { MockedHeadless } from './mocked-headless.ts'

export type PermissionAnswer = acp.PermissionOptionKind | 'cancelled'

export interface AcpClientOptions {
  home: string
  cwd: string
  env: Record<string, string | undefined>
  /** Launcher arguments placed before `--profile acp` (e.g. `--patch file.yml`). */
  args?: string[]
  /** Offer `fs.readTextFile` and `fs.writeTextFile`: reads come from `buffers` (else the disk), writes go to `buffers`. */
  fs?: boolean
}

export interface TranscriptEntry {
  from: 'client' | 'agent'
  message: unknown
}

/**
 * `dsh --profile acp` driven by the ACP library's own client app over the
 * child's stdin and stdout. It answers permission requests from a queue, serves the editor's "unsaved buffers", and keeps a
 * transcript of every message in both directions.
 */
export class AcpTestClient {
  readonly process: DshProcess
  readonly connection: acp.ClientConnection
  readonly permissionRequests: acp.RequestPermissionRequest[] = []
  /** What the client answers to the next permission requests, by option kind; a request finding none is rejected. */
  readonly permissionAnswers: PermissionAnswer[] = []
  /** The editor's open buffers by absolute path: what `fs/read_text_file` returns before the disk. */
  readonly buffers = new Map<string, string>()
  readonly reads: string[] = []
  readonly writes: Array<{ path: string; content: string }> = []
  readonly transcript: TranscriptEntry[] = []

  constructor(readonly options: AcpClientOptions) {
    this.process = startDsh([...(options.args ?? []), '--profile', 'acp'], {
      home: options.home,
      cwd: options.cwd,
      env: options.env,
    })
    const child = this.process.child
    // The testkit reads stdout as text; the protocol stream wants bytes again.
    const encoder = new TextEncoder()
    const output = (Readable.toWeb(child.stdout as Readable) as ReadableStream<string | Uint8Array>).pipeThrough(
      new TransformStream<string | Uint8Array, Uint8Array>({
        transform: (chunk, controller) => controller.enqueue(typeof chunk === 'string' ? encoder.encode(chunk) : chunk),
      }),
    )
    const raw = acp.ndJsonStream(Writable.toWeb(child.stdin as Writable) as WritableStream<Uint8Array>, output)
    const writer = raw.writable.getWriter()
    const stream: acp.Stream = {
      readable: raw.readable.pipeThrough(
        new TransformStream({
          transform: (message, controller) => {
            this.transcript.push({ from: 'agent', message })
            controller.enqueue(message)
          },
        }),
      ),
      writable: new WritableStream({
        write: (message) => {
          this.transcript.push({ from: 'client', message })
          return writer.write(message)
        },
        close: () => writer.close(),
      }),
    }
    this.connection = acp
      .client({ name: 'dsh-test-client' })
      .onNotification(acp.methods.client.session.update, () => {})
      .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
        this.permissionRequests.push(params)
        const answer = this.permissionAnswers.shift() ?? 'reject_once'
        if (answer === 'cancelled') return { outcome: { outcome: 'cancelled' } }
        const option = params.options.find((o) => o.kind === answer)
        if (!option) throw new Error(`the agent offered no ${answer} option`)
        return { outcome: { outcome: 'selected', optionId: option.optionId } }
      })
      .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
        this.reads.push(params.path)
        return { content: this.buffers.get(params.path) ?? readFileSync(params.path, 'utf8') }
      })
      .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => {
        this.writes.push({ path: params.path, content: params.content })
        this.buffers.set(params.path, params.content)
        return {}
      })
      .connect(stream)
  }

  get agent(): acp.ClientContext {
    return this.connection.agent
  }

  initialize(): Promise<acp.InitializeResponse> {
    const fs = this.options.fs === true
    return this.agent.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientInfo: { name: 'dsh-test-client', version: '1.0.0' },
      clientCapabilities: { fs: { readTextFile: fs, writeTextFile: fs }, terminal: false },
    })
  }

  newSession(
    cwd = this.options.cwd,
    mcpServers: acp.McpServer[] = [],
    meta?: Record<string, unknown>,
  ): Promise<acp.NewSessionResponse> {
    return this.agent.request(acp.methods.agent.session.new, { cwd, mcpServers, ...(meta ? { _meta: meta } : {}) })
  }

  prompt(sessionId: string, text: string): Promise<acp.PromptResponse> {
    return this.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text }] })
  }

  /**
   * The updates of one session, in wire order. Read from the transcript,
   * which records each message before the library dispatches it, so every
   * update sent before a response is here once that response has resolved.
   */
  updatesOf(sessionId: string): acp.SessionUpdate[] {
    return this.transcript
      .filter(
        (entry) =>
          entry.from === 'agent' && (entry.message as { method?: string }).method === acp.methods.client.session.update,
      )
      .map((entry) => (entry.message as { params: acp.SessionNotification }).params)
      .filter((params) => params.sessionId === sessionId)
      .map((params) => params.update)
  }

  /** Closes stdin, as an editor that quits does, and waits for the process to exit. */
  async close(): Promise<DshResult> {
    this.process.child.stdin?.end()
    const result = await this.process.exited
    this.connection.close()
    return result
  }
}

/** The text of the chunks of one kind, concatenated. */
export function chunkText(
  updates: acp.SessionUpdate[],
  kind: 'agent_message_chunk' | 'agent_thought_chunk' | 'user_message_chunk',
): string {
  return updates
    .filter((u) => u.sessionUpdate === kind)
    .map((u) =>
      (u as { content: acp.ContentBlock }).content.type === 'text'
        ? (u as { content: { text: string } }).content.text
        : '',
    )
    .join('')
}

/**
 * Registers the hooks of a test file that drives `dsh --profile acp`: `start`
 * opens a client in the test's home and workspace, and every client a test
 * left running is closed after it, so a failure leaves no process behind.
 */
export function useAcpClients(t: MockedHeadless): (options?: Partial<AcpClientOptions>) => AcpTestClient {
  let running: AcpTestClient[] = []
  afterEach(async () => {
    for (const client of running)
      if (client.process.child.exitCode === null && client.process.child.signalCode === null) await client.close()
    running = []
  })
  return (options = {}) => {
    const client = new AcpTestClient({ home: t.home, cwd: t.work, env: t.env(), ...options })
    running.push(client)
    return client
  }
}
