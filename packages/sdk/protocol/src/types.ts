import type { TokenUsage } from '@dsh/wire-types'
import type { z } from 'zod'
import type * as S from './schemas.ts'

/** The shapes shared with every surface; the schemas of the same name validate them. */
export type { ApprovalDecision, Delta, Question, QuestionAnswer, QuestionOption } from '@dsh/wire-types'

export type ClientMethod = keyof typeof S.ClientMethods
/** What a client sends for a method (optional fields may be left out). */
export type ParamsOf<M extends ClientMethod> = z.input<(typeof S.ClientMethods)[M]['params']>
export type ResultOf<M extends ClientMethod> = z.output<(typeof S.ClientMethods)[M]['result']>

export type ServerNotification = keyof typeof S.ServerNotifications
export type NotificationOf<N extends ServerNotification> = z.output<(typeof S.ServerNotifications)[N]>

export type ServerRequest = keyof typeof S.ServerRequests
export type ServerRequestParams<M extends ServerRequest> = z.output<(typeof S.ServerRequests)[M]['params']>
export type ServerRequestResult<M extends ServerRequest> = z.input<(typeof S.ServerRequests)[M]['result']>

export type PromptBlock = z.output<typeof S.PromptBlock>
export type PromptContent = z.output<typeof S.PromptContent>
export type WireEvent = z.output<typeof S.WireEvent>
export type Usage = Required<TokenUsage>
export type ModelSummary = z.output<typeof S.ModelSummary>
export type UsageReport = z.output<typeof S.UsageReport>
export type SessionSummary = z.output<typeof S.SessionSummary>
export type CommandSummary = z.output<typeof S.CommandSummary>
export type StopReason = z.output<typeof S.StopReason>
export type InitializeParams = z.input<typeof S.InitializeParams>
export type InitializeResult = z.output<typeof S.InitializeResult>
export type PromptResult = z.output<typeof S.PromptResult>
export type SessionConfigureParams = z.input<typeof S.SessionConfigureParams>
export type SessionSettings = z.output<typeof S.SessionSettings>
export type SessionListParams = z.input<typeof S.SessionListParams>
export type SessionListResult = z.output<typeof S.SessionListResult>
export type SessionEventNotification = z.output<typeof S.SessionEventNotification>
export type SessionDeltaNotification = z.output<typeof S.SessionDeltaNotification>
export type SessionStatusNotification = z.output<typeof S.SessionStatusNotification>
export type SessionQueuedNotification = z.output<typeof S.SessionQueuedNotification>
export type ApprovalRequestParams = z.output<typeof S.ApprovalRequestParams>
export type ApprovalResult = z.input<typeof S.ApprovalResult>
export type QuestionAskParams = z.output<typeof S.QuestionAskParams>
export type QuestionAskResult = z.input<typeof S.QuestionAskResult>

/** A JSON-RPC id. */
export type RequestId = string | number

export interface JsonRpcRequest {
  jsonrpc: '2.0'
  id: RequestId
  method: string
  params?: unknown
}

export interface JsonRpcNotification {
  jsonrpc: '2.0'
  method: string
  params?: unknown
}

export interface JsonRpcErrorObject {
  code: number
  message: string
  data?: unknown
}

export type JsonRpcResponse =
  | { jsonrpc: '2.0'; id: RequestId | null; result: unknown }
  | { jsonrpc: '2.0'; id: RequestId | null; error: JsonRpcErrorObject }

export type JsonRpcMessage = JsonRpcRequest | JsonRpcNotification | JsonRpcResponse
