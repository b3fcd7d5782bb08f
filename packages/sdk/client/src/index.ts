export { type AttachOptions, type ClientOptions, DshClient, RunError, Session, type SessionUpdate, type SpawnOptions } from './client.ts'
export {
  type ApprovalRequestParams,
  type ApprovalResult,
  ConnectionClosedError,
  ErrorCodes,
  type InitializeResult,
  type PromptContent,
  type PromptResult,
  type QuestionAskParams,
  type QuestionAskResult,
  RequestTimeoutError,
  RpcError,
  type SessionListResult,
  type SessionSummary,
  type WireEvent,
} from '@dsh/sdk-protocol'
