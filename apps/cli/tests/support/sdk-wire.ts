import { type DshOptions, type DshProcess, type DshResult, startDsh } from '@dsh/testkit'

/** A JSON-RPC message as read from stdout (loosely typed: tests look at what they need). */
export type RpcMessage = Record<string, any>

/** One thing that crossed the wire, in order: what the test wrote and what dsh printed. */
export type WireEntry = { send: RpcMessage } | { sendRaw: string } | { recv: RpcMessage }

const WAIT_MS = 20_000

/**
 * Speaks the SDK protocol to a spawned `dsh --profile sdk`: writes raw lines
 * or requests on stdin, parses every stdout line as JSON (a line that is not
 * JSON fails the wait that sees it), and waits for messages by condition.
 */
export class SdkWire {
  readonly proc: DshProcess
  /** Every message dsh printed, in order. */
  readonly received: RpcMessage[] = []
  /** Everything written and read, in order. */
  readonly entries: WireEntry[] = []
  readonly exited: Promise<DshResult>
  /** Answers requests dsh sends (approvals, questions); return undefined to leave one unanswered. */
  answer: ((request: RpcMessage) => unknown) | undefined
  private nextId = 1
  private buffer = ''
  private bad: string | undefined
  private readonly listeners = new Set<() => void>()
  private done = false

  constructor(args: string[], options: DshOptions) {
    this.proc = startDsh(args, options)
    this.exited = this.proc.exited.then((result) => {
      this.done = true
      this.wake()
      return result
    })
    this.proc.child.stdout?.on('data', (chunk: Buffer) => {
      this.buffer += chunk.toString('utf8')
      for (let at = this.buffer.indexOf('\n'); at >= 0; at = this.buffer.indexOf('\n')) {
        const line = this.buffer.slice(0, at)
        this.buffer = this.buffer.slice(at + 1)
        this.take(line)
      }
    })
  }

  private take(line: string): void {
    let message: RpcMessage
    try {
      message = JSON.parse(line)
    } catch {
      this.bad ??= line
      this.wake()
      return
    }
    this.received.push(message)
    this.entries.push({ recv: message })
    if (typeof message.method === 'string' && message.id !== undefined && this.answer) {
      const result = this.answer(message)
      if (result !== undefined) this.send({ jsonrpc: '2.0', id: message.id, result })
    }
    this.wake()
  }

  private wake(): void {
    for (const listener of [...this.listeners]) listener()
  }

  sendRaw(line: string): void {
    this.entries.push({ sendRaw: line })
    this.proc.child.stdin?.write(`${line}\n`)
  }

  send(message: RpcMessage): void {
    this.entries.push({ send: message })
    this.proc.child.stdin?.write(`${JSON.stringify(message)}\n`)
  }

  /** Sends a request and resolves with the whole response message. */
  async request(method: string, params?: unknown): Promise<RpcMessage> {
    const id = this.nextId++
    this.send({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) })
    return this.waitFor((m) => m.id === id && m.method === undefined, `the answer to ${method} (id ${id})`)
  }

  /** Sends a request and resolves with its result; an error answer fails with its message. */
  async call(method: string, params?: unknown): Promise<RpcMessage> {
    const response = await this.request(method, params)
    if (response.error) throw new Error(`${method} failed: ${JSON.stringify(response.error)}`)
    return response.result
  }

  /** The first message (from `from` on) that matches; waits for it to arrive. */
  waitFor(match: (message: RpcMessage) => boolean, what: string, from = 0): Promise<RpcMessage> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (this.bad !== undefined) return finish(new Error(`dsh printed a line that is not JSON: ${this.bad}`))
        const found = this.received.slice(from).find(match)
        if (found) return finish(undefined, found)
        if (this.done) finish(new Error(`dsh exited before ${what} arrived.\nstderr:\n${this.proc.stderr}`))
      }
      const timer = setTimeout(
        () => finish(new Error(`no ${what} within ${WAIT_MS} ms.\nstderr:\n${this.proc.stderr}`)),
        WAIT_MS,
      )
      const finish = (error?: Error, message?: RpcMessage) => {
        clearTimeout(timer)
        this.listeners.delete(check)
        if (error) reject(error)
        else resolve(message as RpcMessage)
      }
      this.listeners.add(check)
      check()
    })
  }

  /** The params of every notification of `method` (for `sessionId` when given) so far. */
  notifications(method: string, sessionId?: string): RpcMessage[] {
    return this.received
      .filter((m) => m.method === method && m.id === undefined && (!sessionId || m.params?.sessionId === sessionId))
      .map((m) => m.params)
  }

  closeInput(): void {
    this.proc.child.stdin?.end()
  }

  /** Asks for shutdown and waits for the exit. */
  async shutdown(): Promise<DshResult> {
    await this.call('shutdown')
    return this.exited
  }
}
