/** A JSON-RPC message as a library passes it between its streams. */
type Message = { id?: unknown; method?: unknown }

/** A JSON-RPC connection's pair of message streams (the shape of ACP's `Stream`). */
export interface MessageStreams<M extends object> {
  readable: ReadableStream<M>
  writable: WritableStream<M>
}

export interface AnsweredEndOptions {
  /** Called when the input ends, before the wait: the place to cancel the work the requests wait on. */
  onEnd(): void
  /** The longest wait for the answers, in milliseconds. */
  timeoutMs: number
  /** Called when the wait timed out, with the number of requests still unanswered. */
  onTimeout(unanswered: number): void
}

/**
 * Wraps a connection's message streams so that the end of its input is held
 * back until every request read from it has been answered (its response
 * written), at most `timeoutMs`. For JSON-RPC libraries that stop writing
 * answers once their input has ended: the requests in flight would never be
 * answered otherwise.
 */
export function answeredBeforeEnd<M extends object>(
  stream: MessageStreams<M>,
  options: AnsweredEndOptions,
): MessageStreams<M> {
  /** Ids of the requests read and not answered yet. */
  const pending = new Set<unknown>()
  let answered = () => {}
  const isRequest = (m: Message) => 'method' in m && 'id' in m && m.id !== undefined
  const isResponse = (m: Message) => !('method' in m) && 'id' in m

  const ended = async () => {
    options.onEnd()
    if (pending.size === 0) return
    let timer: NodeJS.Timeout | undefined
    await new Promise<void>((resolve) => {
      timer = setTimeout(resolve, options.timeoutMs)
      answered = () => {
        if (pending.size === 0) resolve()
      }
    })
    clearTimeout(timer)
    answered = () => {}
    if (pending.size > 0) options.onTimeout(pending.size)
  }

  const readable = stream.readable.pipeThrough(
    new TransformStream<M, M>({
      transform: (message, controller) => {
        if (isRequest(message as Message)) pending.add((message as Message).id)
        controller.enqueue(message)
      },
      flush: ended,
    }),
  )
  const writer = stream.writable.getWriter()
  const writable = new WritableStream<M>({
    write: async (message) => {
      await writer.write(message)
      if (isResponse(message as Message) && pending.delete((message as Message).id)) answered()
    },
    close: () => writer.close(),
    abort: (reason) => writer.abort(reason),
  })
  return { readable, writable }
}
