import { type CompletionReply, type MockReply, reply, type ToolCallSpec, type UsageSpec } from '@dsh/llm-mock'
import { isObject, type LoggedEvent, ReplayError, type SessionLog } from './log.ts'

/** The wire `finish_reason` for each logged finish a reply can be replayed with. */
const FINISH_REASONS: Record<string, string> = {
  stop: 'stop',
  'tool-calls': 'tool_calls',
  'max-tokens': 'length',
}

/** Attempt failures that never reached the provider: they took no request, so they get no reply. */
const OFFLINE_CODES = new Set(['MISSING_CREDENTIAL', 'INVALID_CREDENTIAL', 'UNKNOWN_ROUTE', 'INTERNAL'])

export interface RepliesOptions {
  /**
   * The `Retry-After` (seconds) sent with every error reply. Default: the
   * attempt's logged `retryAfterMs` in seconds, so the retry waits as long
   * as it did when recorded; 0 when none was logged, so it never waits on a
   * (jittered) backoff.
   */
  retryAfter?: number
}

function fail(event: LoggedEvent, problem: string): never {
  throw new ReplayError(`event seq ${event.seq} (${event.type}): ${problem}`)
}

/** The logged TokenUsage as the mock's usage spec; `null` (no usage chunk) when the message had none. */
function usageSpec(event: LoggedEvent): UsageSpec | null {
  const usage = event.data.usage
  if (usage === undefined) return null
  if (!isObject(usage) || typeof usage.inputTokens !== 'number' || typeof usage.outputTokens !== 'number')
    fail(event, 'usage lacks inputTokens or outputTokens')
  const number = (value: unknown) => (typeof value === 'number' ? value : 0)
  return {
    promptCacheMissTokens: usage.inputTokens,
    promptCacheHitTokens: number(usage.cacheReadTokens),
    completionTokens: usage.outputTokens,
    reasoningTokens: number(usage.reasoningTokens),
  }
}

/**
 * The completion that makes the adapter log this message again. The mock
 * streams reasoning, then text, then tool calls, so a message whose blocks
 * come in another order (or that holds other blocks) cannot be replayed.
 */
function completionFor(event: LoggedEvent): CompletionReply {
  const { message, finish, interrupted } = event.data
  if (interrupted) fail(event, 'the reply was interrupted by a cancel; replaying cancelled replies is not supported')
  if (!isObject(message) || !Array.isArray(message.content)) fail(event, 'data.message.content is missing')
  const finishReason = FINISH_REASONS[String(finish)]
  if (!finishReason)
    fail(event, `finish "${String(finish)}" cannot be replayed (only ${Object.keys(FINISH_REASONS).join(', ')})`)

  // One reasoning block, then one text block, then any number of tool calls: what the mock streams.
  const order = ['reasoning', 'text', 'tool-call']
  let stage = -1
  let reasoning = ''
  let content = ''
  const toolCalls: ToolCallSpec[] = []
  for (const [i, block] of (message.content as unknown[]).entries()) {
    const type = isObject(block) ? block.type : undefined
    const at = order.indexOf(String(type))
    if (!isObject(block) || at < 0)
      fail(
        event,
        `content block ${i} has type "${String(type)}"; only reasoning, text and tool-call blocks can be replayed`,
      )
    if (at < stage || (at === stage && type !== 'tool-call')) {
      fail(
        event,
        `content block ${i} (${String(type)}) is out of order; the mock streams one reasoning block, one text block, then tool calls`,
      )
    }
    stage = at
    if (type === 'tool-call') {
      if (typeof block.id !== 'string' || typeof block.name !== 'string' || typeof block.arguments !== 'string')
        fail(event, `tool-call block ${i} lacks id, name or arguments`)
      toolCalls.push({ id: block.id, name: block.name, arguments: block.arguments })
    } else if (typeof block.text !== 'string') fail(event, `${String(type)} block ${i} has no text`)
    else if (type === 'reasoning') reasoning += block.text
    else content += block.text
  }

  const spec: Omit<CompletionReply, 'kind'> = { finishReason, usage: usageSpec(event) }
  if (reasoning) spec.reasoning = reasoning
  if (content) spec.content = content
  if (toolCalls.length > 0) spec.toolCalls = toolCalls
  return reply.completion(spec)
}

/** Whether a failed attempt reached the provider (and so took one request). */
function madeRequest(event: LoggedEvent): boolean {
  const error = event.data.error
  if (!isObject(error)) return true
  return typeof error.status === 'number' || !OFFLINE_CODES.has(String(error.code))
}

/** The reply that makes the adapter log this failed attempt again. */
function failureFor(event: LoggedEvent, options: RepliesOptions): MockReply {
  const error = event.data.error
  if (!isObject(error) || typeof error.code !== 'string') fail(event, 'data.error.code is missing')
  // The adapter logs the provider's request id (the x-request-id header); send the recorded one back.
  const headers = typeof error.requestId === 'string' ? { headers: { 'x-request-id': error.requestId } } : {}
  if (typeof error.status === 'number') {
    const recorded = typeof error.retryAfterMs === 'number' ? error.retryAfterMs / 1000 : undefined
    return reply.error(error.status, { retryAfter: options.retryAfter ?? recorded ?? 0, ...headers })
  }
  switch (error.code) {
    case 'TRANSPORT':
      // The response starts, then the socket is destroyed before the first data event.
      return reply.cut(0, reply.empty(), headers)
    case 'EMPTY_RESPONSE':
      return reply.empty({ usage: usageSpec(event), ...headers })
    default:
      fail(
        event,
        `a failure with code ${error.code} and no HTTP status cannot be replayed (supported: an HTTP status, TRANSPORT, EMPTY_RESPONSE)`,
      )
  }
}

/** The events of a log that stand for one model request each, in order: `assistant/message` and the `assistant/attempt`s that reached the provider. */
export function modelCalls(log: SessionLog): LoggedEvent[] {
  return log.events.filter(
    (event) => event.type === 'assistant/message' || (event.type === 'assistant/attempt' && madeRequest(event)),
  )
}

/**
 * The mock replies that answer the requests of a new run the way the model
 * answered the logged ones: one per `assistant/message` (a completion with
 * the same reasoning, text, tool calls, finish and usage) and one per
 * `assistant/attempt` that reached the provider (an HTTP error with the
 * logged status, a cut connection for TRANSPORT, an empty stream for
 * EMPTY_RESPONSE). Throws a `ReplayError` naming the event it cannot replay.
 */
export function repliesFromLog(log: SessionLog, options: RepliesOptions = {}): MockReply[] {
  return modelCalls(log).map((event) =>
    event.type === 'assistant/message' ? completionFor(event) : failureFor(event, options),
  )
}
