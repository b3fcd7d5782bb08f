export { startMockLlm, type MockLlm, type MockLlmOptions } from './server.ts'
export { reply, type ErrorOptions } from './reply.ts'
export { completionEvents, estimateTokens } from './chunks.ts'
export type {
  CompletionReply,
  CutReply,
  ErrorReply,
  MockReply,
  MockScript,
  RawReply,
  RecordedRequest,
  StallReply,
  StreamOptions,
  ToolCallSpec,
  UsageSpec,
} from './types.ts'
export { OPENAI_CHAT_FIELDS } from './server.ts'
export {
  anthropicStream,
  geminiStream,
  json,
  modelList,
  responsesStream,
  type WireReplySpec,
} from './wires.ts'
export type { EventsReply, JsonReply, WireEvent } from './types.ts'
