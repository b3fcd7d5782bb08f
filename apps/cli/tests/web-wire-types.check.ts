// Compile-time check (pnpm typecheck, host config): the browser's copy of the
// wire types in @dsh/web-client must describe the same JSON as the server's
// own types. The browser build cannot import the server packages (they pull
// in Node typings through cordis), so packages/client/web-client/src/types.ts
// mirrors them; a change on either side that the other does not follow fails
// here, naming the type. Not a vitest file: nothing runs.
import type { ContentBlock, LlmFailure, Message, MessageSource, TokenUsage } from '@dsh/llm'
import type { PermissionPreset } from '@dsh/permission'
import type { Question, QuestionAnswer } from '@dsh/questions'
import type { SessionEventMap } from '@dsh/session'
import type { Todo } from '@dsh/todo'
import type * as Wire from '../../../packages/client/web-client/src/types.ts'
import type { EarlierHistory } from '../../../packages/host/web-server/src/gateway/history.ts'
// The plugins that add the event types the web app shows (declaration merging).
import type {} from '@dsh/compaction'
import type {} from '@dsh/llm-retry'
import type {} from '@dsh/plan-mode'
import type {} from '@dsh/session-titles'

/** The JSON a value becomes: branded ids are plain strings on the wire, readonly goes away. */
type Json<T> = T extends string
  ? [Exclude<keyof T, keyof string>] extends [never]
    ? T
    : string
  : T extends number | boolean | null | undefined
    ? T
    : T extends readonly (infer U)[]
      ? Json<U>[]
      : T extends object
        ? { -readonly [K in keyof T]: Json<T[K]> }
        : T

/**
 * Whether whatever the server sends as `Server` reads as the browser's `Client`
 * (the browser may accept more: a plain string where the server has a union
 * of codes, fields it tolerates being absent).
 */
type Reads<Client, Server> = [Json<Server>] extends [Json<Client>] ? true : false

/** `true` for every event type the browser knows when the server's data reads as the browser expects it. */
type EventsAgree = { [K in keyof Wire.SessionEventMap]: K extends keyof SessionEventMap ? Reads<Wire.SessionEventMap[K], SessionEventMap[K]> : 'not a server event type' }

const events: EventsAgree = {
  'turn/start': true,
  'turn/end': true,
  'step/start': true,
  'step/end': true,
  'system/message': true,
  'user/message': true,
  'assistant/message': true,
  'assistant/attempt': true,
  'tool/call': true,
  'tool/result': true,
  'request/header': true,
  'request/context': true,
  'session/end-seed': true,
  'llm/retry': true,
  'permission/decision': true,
  'todo/write': true,
  'session/title': true,
  'plan/mode': true,
  'context/compaction': true,
}

const shapes: {
  contentBlock: Reads<Wire.ContentBlock, ContentBlock>
  messageSource: Reads<Wire.MessageSource, MessageSource>
  message: Reads<Wire.Message, Message>
  tokenUsage: Reads<Wire.TokenUsage, TokenUsage>
  llmFailure: Reads<Wire.LlmFailure, LlmFailure>
  todo: Reads<Wire.Todo, Todo>
  permissionPreset: Reads<Wire.PermissionPreset, PermissionPreset>
  question: Reads<Wire.Question, Question>
  questionAnswer: Reads<Wire.QuestionAnswer, QuestionAnswer>
  earlierHistory: Reads<Wire.EarlierHistory, EarlierHistory>
} = {
  contentBlock: true,
  messageSource: true,
  message: true,
  tokenUsage: true,
  llmFailure: true,
  todo: true,
  permissionPreset: true,
  question: true,
  questionAnswer: true,
  earlierHistory: true,
}

export const wireTypesAgree = { events, shapes }
