// The SDK scenarios as first written: the client's steps and the model's
// replies. `DSH_RECORD_SDK=1 npx vitest run snapshots/sdk` runs them and
// writes each folder (see snapshots/README.md); the replay reads only the
// folders.
import { type MockReply, reply } from '../../packages/test-support/llm-mock/src/index.ts'

export type Step =
  /** A request; string values may hold placeholders (`<workspace>`, `<session-1>`). */
  | { request: string; params?: Record<string, unknown> }
  /** A raw line, answered by one message. */
  | { raw: string }

export interface ScenarioScript {
  description: string
  files?: Record<string, string>
  steps: Step[]
  /** What the client answers to the server's requests, in order, by method. */
  answers?: Record<string, unknown[]>
  replies: () => MockReply[]
}

const initialize = (capabilities: Record<string, boolean> = {}): Step => ({
  request: 'initialize',
  params: { protocolVersion: 1, clientInfo: { name: 'snapshot' }, capabilities },
})

export const SCENARIOS: Record<string, ScenarioScript> = {
  'prompt-bash': {
    description:
      'initialize, a new session, a prompt whose answer needs bash (events, deltas, status), the log after a seq, shutdown',
    files: { 'notes.txt': 'alpha\nbeta\ngamma\n' },
    steps: [
      initialize(),
      { request: 'session/new', params: { cwd: '<workspace>' } },
      {
        request: 'session/prompt',
        params: { sessionId: '<session-1>', content: 'How many lines does notes.txt have?' },
      },
      { request: 'session/events', params: { sessionId: '<session-1>', afterSeq: 11 } },
      { request: 'shutdown' },
    ],
    replies: () => [
      reply.toolCalls([{ name: 'bash', arguments: { command: 'wc -l < notes.txt', description: 'Count the lines' } }], {
        reasoning: 'Count them with wc.',
      }),
      reply.text('notes.txt has 3 lines.'),
    ],
  },

  'approval-write': {
    description: 'a read-only session whose writes the client approves once, then rejects with a message',
    steps: [
      initialize({ approvals: true }),
      { request: 'session/new', params: { cwd: '<workspace>', permissionPreset: 'read-only' } },
      { request: 'session/prompt', params: { sessionId: '<session-1>', content: 'Create hello.txt saying hi.' } },
      { request: 'session/prompt', params: { sessionId: '<session-1>', content: 'Now create bye.txt saying bye.' } },
      { request: 'shutdown' },
    ],
    answers: { 'approval/request': [{ decision: 'allow-once' }, { decision: 'reject', message: 'not that one' }] },
    replies: () => [
      reply.toolCalls([{ name: 'write', arguments: { file_path: 'hello.txt', content: 'hi\n' } }]),
      reply.text('Created hello.txt.'),
      reply.toolCalls([{ name: 'write', arguments: { file_path: 'bye.txt', content: 'bye\n' } }]),
      reply.text('The user did not want bye.txt.'),
    ],
  },

  'bad-input': {
    description: 'protocol mistakes, each answered with its error while the server keeps going',
    steps: [
      { raw: 'not json at all' },
      { raw: '[{"jsonrpc":"2.0","id":1,"method":"initialize"}]' },
      { raw: '{"jsonrpc":"2.0","id":"x","method":7}' },
      { request: 'session/list' },
      { request: 'no/such/method' },
      initialize(),
      { request: 'session/new', params: { cwd: 'not/absolute' } },
      { request: 'session/prompt', params: { sessionId: 'session-unknown', content: 'hello' } },
      { request: 'session/prompt', params: { sessionId: 'session-unknown', content: [{ type: 'audio' }] } },
      { request: 'session/events', params: { sessionId: 'session-unknown' } },
      { request: 'shutdown' },
    ],
    replies: () => [],
  },
}
