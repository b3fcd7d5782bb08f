import { pathToFileURL } from 'node:url'
import type { ProcessExit, ProcessHandle } from '@dsh/subprocess'
import { errorMessage } from '@dsh/tools'
import {
  CancellationTokenSource,
  ConnectionError,
  createMessageConnection,
  ErrorCodes,
  ResponseError,
  type MessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
} from 'vscode-jsonrpc/node.js'
import type { Diagnostic, InitializeParams, PublishDiagnosticsParams } from 'vscode-languageserver-protocol'
import type { ServerConfig } from './config.ts'
import { FrameLimit } from './frame-limit.ts'

/** Why a server can no longer be used. */
export class ServerStopped extends Error {
  override name = 'ServerStopped'
}

/** A request that ran out of time. */
export class RequestTimedOut extends Error {
  override name = 'RequestTimedOut'
}

/** A text a server was handed, as of its last sync. */
interface OpenDocument {
  version: number
  text: string
}

interface Published {
  /** Counts publications for this file, so a wait can tell a new one from an old one. */
  seq: number
  items: Diagnostic[]
}

export interface ServerStart {
  id: string
  config: ServerConfig
  root: string
  handle: ProcessHandle
  requestTimeoutMs: number
  startTimeoutMs: number
  maxStderrBytes: number
  maxMessageBytes: number
}

/**
 * One running language server: the process, its JSON-RPC connection, the
 * documents it was handed and the diagnostics it published. It is dead once
 * the process exits, the stream breaks, or it writes something that is not
 * LSP; the provider then starts another one.
 */
export class RunningServer {
  readonly id: string
  readonly root: string
  readonly ready: Promise<void>
  /** Settles (never rejects) once the process is gone. */
  readonly exited: Promise<string>
  private readonly connection: MessageConnection
  private readonly documents = new Map<string, OpenDocument>()
  private readonly published = new Map<string, Published>()
  private readonly waiters = new Set<() => void>()
  /** What it said it can do in `initialize`. */
  capabilities: Record<string, unknown> = {}
  private stderrTail = ''
  private stopReason: string | undefined

  constructor(private readonly start: ServerStart) {
    this.id = start.id
    this.root = start.root
    const { handle } = start
    if (!handle.stdin) throw new Error('lsp-stdio: the server process has no stdin pipe')
    handle.stderr.on('data', (chunk: Buffer) => {
      this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-start.maxStderrBytes)
    })
    this.exited = handle.done.then(
      (exit) => this.markStopped(describeExit(exit)),
      (error: unknown) => this.markStopped(error instanceof Error ? error.message : String(error)),
    )
    this.connection = createMessageConnection(
      new StreamMessageReader(handle.stdout.pipe(new FrameLimit(start.maxMessageBytes))),
      new StreamMessageWriter(handle.stdin),
    )
    this.connection.onError(([error]) => {
      // Garbage on stdout: nothing it says later can be trusted.
      this.markStopped(`it wrote something that is not LSP (${error.message})`)
      void handle.kill()
    })
    // The process's own exit says more (a signal, a code); it follows the closed stream closely.
    this.connection.onClose(() => {
      void Promise.race([this.exited, delay(1_000)]).then(() => this.markStopped('its output stream closed'))
    })
    this.connection.onNotification('textDocument/publishDiagnostics', (params: PublishDiagnosticsParams) =>
      this.onDiagnostics(params),
    )
    this.connection.onRequest('workspace/configuration', (params: { items?: unknown[] }) =>
      (params.items ?? []).map(() => start.config.configuration ?? null),
    )
    this.connection.onRequest('workspace/workspaceFolders', () => [this.folder()])
    // Registrations, progress tokens, messages to show: accepted and ignored.
    this.connection.onRequest(() => null)
    this.connection.onNotification(() => {})
    this.connection.listen()
    this.ready = this.initialize()
    this.ready.catch(() => {}) // reported through whoever awaits it
  }

  /** Whether it can still answer. */
  get alive(): boolean {
    return this.stopReason === undefined
  }

  /** Why it stopped, with the tail of what it wrote to stderr. */
  get stoppedBecause(): string {
    const tail = this.stderrTail.trim().split('\n').slice(-5).join('\n')
    return `${this.stopReason ?? 'it is running'}${tail ? `; its last stderr lines:\n${tail}` : ''}`
  }

  /** Hands the server a file's current text: `didOpen` the first time, `didChange` when it differs. True when either was sent. */
  sync(file: string, languageId: string, text: string): boolean {
    const uri = pathToFileURL(file).href
    const open = this.documents.get(uri)
    if (!open) {
      this.documents.set(uri, { version: 1, text })
      void this.notify('textDocument/didOpen', { textDocument: { uri, languageId, version: 1, text } })
      return true
    }
    if (open.text === text) return false
    open.version++
    open.text = text
    void this.notify('textDocument/didChange', {
      textDocument: { uri, version: open.version },
      contentChanges: [{ text }],
    })
    return true
  }

  /** The files it was handed so far. */
  openFiles(): string[] {
    return [...this.documents.keys()]
  }

  /** How many times it published diagnostics for the file so far. */
  publications(file: string): number {
    return this.published.get(pathToFileURL(file).href)?.seq ?? 0
  }

  /**
   * Waits until the server publishes diagnostics for the file more than
   * `after` times, then for `settleMs` of quiet (servers often report syntax
   * and type errors separately), never past `deadline`. Undefined when it
   * said nothing new in time.
   */
  async diagnosticsAfter(file: string, after: number, deadline: number, settleMs: number) {
    const uri = pathToFileURL(file).href
    const seq = () => this.published.get(uri)?.seq ?? 0
    while (seq() <= after) {
      if (!this.alive || !(await this.nextPublication(deadline))) return undefined
    }
    for (let seen = seq(); ; seen = seq()) {
      await this.nextPublication(Math.min(deadline, Date.now() + settleMs))
      if (seq() === seen || !this.alive) break
    }
    return this.published.get(uri)?.items
  }

  /** Sends a request, bounded by the request timeout, the caller's signal and the process's life. */
  async request<T>(method: string, params: unknown, signal?: AbortSignal): Promise<T> {
    await this.ready
    return this.bounded(method, params, this.start.requestTimeoutMs, signal)
  }

  /** Asks it to shut down, then kills it whatever it answers. */
  async stop(timeoutMs: number): Promise<void> {
    if (this.alive) {
      try {
        await this.bounded('shutdown', null, timeoutMs)
        await this.notify('exit', null)
      } catch {
        // killed below either way
      }
    }
    this.markStopped('it was stopped')
    await Promise.race([this.exited, delay(timeoutMs)])
    await this.start.handle.kill()
    this.connection.dispose()
  }

  private async initialize(): Promise<void> {
    const params: InitializeParams = {
      // The server runs in its own PID namespace: dsh's pid would look dead to it.
      processId: null,
      clientInfo: { name: 'dsh' },
      rootUri: pathToFileURL(this.root).href,
      workspaceFolders: [this.folder()],
      initializationOptions: this.start.config.initializationOptions ?? null,
      capabilities: {
        workspace: { configuration: true, workspaceFolders: true },
        textDocument: {
          synchronization: { dynamicRegistration: false, didSave: false },
          definition: { linkSupport: true },
          implementation: { linkSupport: true },
          references: {},
          hover: { contentFormat: ['markdown', 'plaintext'] },
          publishDiagnostics: { versionSupport: true },
        },
      },
    }
    const answer = await this.bounded<{ capabilities?: unknown }>('initialize', params, this.start.startTimeoutMs)
    const capabilities = answer?.capabilities
    if (typeof capabilities === 'object' && capabilities !== null)
      this.capabilities = capabilities as Record<string, unknown>
    await this.notify('initialized', {})
  }

  private folder() {
    return { uri: pathToFileURL(this.root).href, name: this.root.split('/').pop() || this.root }
  }

  private async notify(method: string, params: unknown): Promise<void> {
    if (!this.alive) return
    try {
      await this.connection.sendNotification(method, params)
    } catch {
      // a broken pipe shows as the process's exit
    }
  }

  private bounded<T>(method: string, params: unknown, timeoutMs: number, signal?: AbortSignal): Promise<T> {
    if (!this.alive) return Promise.reject(new ServerStopped(this.stoppedBecause))
    const cancel = new CancellationTokenSource()
    let timer: NodeJS.Timeout | undefined
    let onAbort: (() => void) | undefined
    const outcome = new Promise<T>((resolve, reject) => {
      timer = setTimeout(() => {
        cancel.cancel()
        reject(new RequestTimedOut(`${method} got no answer within ${timeoutMs} ms`))
      }, timeoutMs)
      if (signal) {
        onAbort = () => {
          cancel.cancel()
          reject(signal.reason instanceof Error ? signal.reason : new Error('cancelled'))
        }
        if (signal.aborted) onAbort()
        else signal.addEventListener('abort', onAbort, { once: true })
      }
      void this.exited.then(() => reject(new ServerStopped(this.stoppedBecause)))
      // A connection that closed is a server that died, even before its exit is seen.
      const stoppedOr = (error: unknown) => {
        if (!this.alive) return new ServerStopped(this.stoppedBecause)
        return connectionGone(error) ? new ServerStopped(`its connection closed (${errorMessage(error)})`) : error
      }
      try {
        this.connection.sendRequest<T>(method, params, cancel.token).then(resolve, (error: unknown) => {
          reject(stoppedOr(error))
        })
      } catch (error) {
        reject(stoppedOr(error))
      }
    })
    return outcome.finally(() => {
      clearTimeout(timer)
      if (onAbort) signal?.removeEventListener('abort', onAbort)
      cancel.dispose()
    })
  }

  private onDiagnostics(params: PublishDiagnosticsParams): void {
    const previous = this.published.get(params.uri)
    this.published.set(params.uri, {
      seq: (previous?.seq ?? 0) + 1,
      items: Array.isArray(params.diagnostics) ? params.diagnostics : [],
    })
    this.wake()
  }

  private nextPublication(until: number): Promise<boolean> {
    const wait = until - Date.now()
    if (wait <= 0) return Promise.resolve(false)
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiters.delete(wake)
        resolve(false)
      }, wait)
      const wake = () => {
        clearTimeout(timer)
        this.waiters.delete(wake)
        resolve(true)
      }
      this.waiters.add(wake)
    })
  }

  private wake(): void {
    for (const wake of [...this.waiters]) wake()
  }

  private markStopped(reason: string): string {
    this.stopReason ??= reason
    this.wake()
    return this.stopReason
  }
}

function describeExit(exit: ProcessExit): string {
  if (exit.cancelled) return 'it was stopped'
  if (exit.signal) return `it was killed by ${exit.signal}`
  return `it exited with code ${exit.code}`
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref())
}

/** The errors vscode-jsonrpc gives a request when the connection under it closed. */
function connectionGone(error: unknown): boolean {
  return (
    error instanceof ConnectionError ||
    (error instanceof ResponseError && error.code === ErrorCodes.PendingResponseRejected)
  )
}
