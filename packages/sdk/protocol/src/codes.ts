/** The protocol version this package describes; `initialize` must ask for it. */
export const PROTOCOL_VERSION = 1

/**
 * JSON-RPC error codes. The first five are the standard ones; the others are
 * dsh's own, in the range JSON-RPC leaves to servers (-32000 to -32099).
 */
export const ErrorCodes = {
  /** A line that is not JSON. The reply has `id: null`. */
  ParseError: -32700,
  /** JSON that is not a JSON-RPC 2.0 request (or a line over the size limit). */
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  /** The params fail the method's schema; `data.field` names the first bad field. */
  InvalidParams: -32602,
  InternalError: -32603,
  /** The session id names no session this server can open. */
  UnknownSession: -32001,
  /** The session is already running a prompt (or a compaction). */
  SessionBusy: -32002,
  /** A method other than `initialize` or `shutdown` came before `initialize`. */
  NotInitialized: -32003,
  /** `initialize` came a second time. */
  AlreadyInitialized: -32004,
  /** The server is shutting down and takes no new work. */
  ShuttingDown: -32005,
  /** The request was cancelled by the side that sent it (`$/cancelRequest`). */
  RequestCancelled: -32006,
} as const

export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes]

/** A JSON-RPC error, thrown by method handlers and raised by `request()` when the other side answers with an error. */
export class RpcError extends Error {
  override name = 'RpcError'
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message)
  }
}

/** The connection is gone: the other side exited, closed its stream, or `close()` was called. */
export class ConnectionClosedError extends Error {
  override name = 'ConnectionClosedError'
}
