export { type AnsweredEndOptions, answeredBeforeEnd, type MessageStreams } from './answered-end.ts'
export { ConnectionClosedError, type ErrorCode, ErrorCodes, PROTOCOL_VERSION, RpcError } from './codes.ts'
export { oversizedLineGuard } from './line-guard.ts'
export { MethodDispatcher, type MethodHandlers, type ParsedParams } from './dispatcher.ts'
export { LineSplitter } from './lines.ts'
export {
  DEFAULT_MAX_LINE_BYTES,
  JsonRpcPeer,
  type PeerOptions,
  type RequestContext,
  type RequestOptions,
  RequestTimeoutError,
} from './peer.ts'
export { peekRequestId, REQUEST_ID_SCAN_CHARS } from './request-id.ts'
/** The zod schema of every params, result, notification and shared shape, by the type's name. */
export * as schemas from './schemas.ts'
export { sessionIdProblem } from './session-id.ts'
export { type ProtocolStdio, protocolStdio } from './stdio.ts'
export { CANCEL_REQUEST, ClientMethods, ServerNotifications, ServerRequests } from './schemas.ts'
export type * from './types.ts'
export { type FieldIssue, fieldIssues, invalidField, parseParams } from './validate.ts'
