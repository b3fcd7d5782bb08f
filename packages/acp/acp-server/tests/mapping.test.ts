import type { SessionUpdate } from '@agentclientprotocol/sdk'
import type { ToolCallId } from '@dsh/llm'
import type { SessionEvent } from '@dsh/session'
import { callTarget, presentCall, textArgument, type ToolDefinition } from '@dsh/tools'
import { describe, expect, it } from 'vitest'
import { promptMessage, SessionUpdates, ToolViews } from '../src/index.ts'

const limits = { images: false, model: 'text-model', maxBytes: 1000 }

describe('prompts', () => {
  it('joins text, links resources and inlines embedded context', () => {
    const message = promptMessage(
      [
        { type: 'text', text: 'Look at' },
        { type: 'resource_link', name: 'main.ts', uri: 'file:///work/src/main.ts' },
        { type: 'text', text: ' and this:' },
        { type: 'resource', resource: { uri: 'file:///work/notes.md', text: 'remember the milk' } },
      ],
      limits,
    )
    expect(message).toMatchObject({ role: 'user', source: { kind: 'user' } })
    expect(message.content).toEqual([
      {
        type: 'text',
        text: 'Look at [main.ts](/work/src/main.ts) and this:\n<context source="/work/notes.md">\nremember the milk\n</context>\n',
      },
    ])
  })

  it('takes images only when the model does, and refuses audio, binary resources, empty and oversized prompts naming the block', () => {
    const png = { type: 'image' as const, mimeType: 'image/png', data: 'iVBORw0KGgo=' }
    expect(promptMessage([{ type: 'text', text: 'see' }, png], { ...limits, images: true }).content).toEqual([
      { type: 'text', text: 'see' },
      { type: 'image', mediaType: 'image/png', data: 'iVBORw0KGgo=' },
    ])
    expect(() => promptMessage([png], limits)).toThrow(
      'prompt[0] (image) cannot be used: the model text-model does not take images',
    )
    expect(() => promptMessage([{ ...png, mimeType: 'image/bmp' }], { ...limits, images: true })).toThrow(
      'has type image/bmp',
    )
    expect(() => promptMessage([{ ...png, data: 'not base64!' }], { ...limits, images: true })).toThrow(
      'is not valid base64',
    )
    expect(() => promptMessage([{ type: 'audio', mimeType: 'audio/wav', data: 'AAAA' }], limits)).toThrow(
      'prompt[0] (audio): audio prompts are not supported',
    )
    expect(() =>
      promptMessage(
        [{ type: 'resource', resource: { uri: 'file:///a.zip', blob: 'AAAA', mimeType: 'application/zip' } }],
        limits,
      ),
    ).toThrow('the binary resource file:///a.zip (application/zip) cannot be used')
    expect(() => promptMessage([{ type: 'text', text: '  \n' }], limits)).toThrow('the prompt is empty')
    expect(() => promptMessage([{ type: 'text', text: 'x'.repeat(1001) }], limits)).toThrow(
      'more than the limit of 1000 (acp-server config maxPromptBytes)',
    )
    let thrown: unknown
    try {
      promptMessage([], limits)
    } catch (error) {
      thrown = error
    }
    // The one prompt check of every surface (`checkedPrompt`); the server answers it -32602 naming `content`.
    expect(thrown).toMatchObject({ kind: 'invalid', message: 'the prompt is empty', details: { field: 'content' } })
  })
})

/** Tools as a plugin would declare them; none of their names is known to the ACP server. */
const definitions: Record<string, Pick<ToolDefinition, 'presentation'>> = {
  read: {
    presentation: { kind: 'read', view: 'read', title: (args, shown) => `Read ${shown(callTarget(args) ?? '.')}` },
  },
  patch: {
    presentation: {
      kind: 'edit',
      view: 'diff',
      title: (args, shown) => `Patch ${shown(callTarget(args) ?? '.')}`,
      change: (args) => ({
        path: callTarget(args) ?? '.',
        oldText: textArgument(args, 'old') ?? null,
        newText: textArgument(args, 'new') ?? '',
      }),
    },
  },
  shell: {
    presentation: {
      kind: 'execute',
      view: 'terminal',
      title: (args) => `\`${textArgument(args, 'command')}\``,
      locations: () => [],
    },
  },
}
const tools = {
  present: (call: { name: string; arguments: string }, cwd: string) =>
    presentCall(call.name, definitions[call.name], call.arguments, cwd),
}

describe('tool calls', () => {
  const views = new ToolViews('/work', tools, { deploy: 'execute' })

  it("names, sorts and locates calls by the tool's own presentation", () => {
    expect(views.toolCall('c1', 'read', JSON.stringify({ path: 'src/a.ts' }))).toMatchObject({
      title: 'Read src/a.ts',
      kind: 'read',
      locations: [{ path: '/work/src/a.ts' }],
    })
    expect(views.toolCall('c1', 'patch', JSON.stringify({ path: '/etc/hosts', old: 'a', new: 'b' }))).toEqual({
      toolCallId: 'c1',
      status: 'pending',
      title: 'Patch /etc/hosts',
      kind: 'edit',
      locations: [{ path: '/etc/hosts' }],
      content: [{ type: 'diff', path: '/etc/hosts', oldText: 'a', newText: 'b' }],
      rawInput: { path: '/etc/hosts', old: 'a', new: 'b' },
    })
    expect(views.toolCall('c1', 'patch', JSON.stringify({ path: 'n.md', new: 'hi' })).content).toEqual([
      { type: 'diff', path: '/work/n.md', oldText: null, newText: 'hi' },
    ])
    const shell = views.toolCall('c1', 'shell', JSON.stringify({ command: 'npm test' }))
    expect(shell).toMatchObject({ title: '`npm test`', kind: 'execute' })
    // Nothing to locate: ACP's optional locations are left out.
    expect(shell.locations).toBeUndefined()
    expect(views.toolCall('c1', 'lint', JSON.stringify({ path: 'src' }))).toMatchObject({
      title: 'lint: src',
      kind: 'other',
      locations: [{ path: '/work/src' }],
    })
    expect(views.toolCall('c1', 'deploy', JSON.stringify({ description: 'ship it' }))).toMatchObject({
      title: 'deploy: ship it',
      kind: 'execute',
    })
    const unparsed = views.toolCall('c1', 'read', 'not json')
    expect(unparsed).toMatchObject({ title: 'read', kind: 'read', rawInput: 'not json' })
    expect(unparsed.locations).toBeUndefined()
  })

  it('fences terminal and read output, keeps the diff of a successful diff call, and reports failures as text', () => {
    expect(views.resultContent('shell', [{ type: 'text', text: 'ok\n' }], false)).toEqual([
      { type: 'content', content: { type: 'text', text: '```console\nok\n```' } },
    ])
    expect(views.resultContent('read', [{ type: 'text', text: 'x' }], false)).toEqual([
      { type: 'content', content: { type: 'text', text: '```\nx\n```' } },
    ])
    expect(views.resultContent('lint', [{ type: 'text', text: 'clean' }], false)).toEqual([
      { type: 'content', content: { type: 'text', text: 'clean' } },
    ])
    expect(views.resultContent('patch', [{ type: 'text', text: 'Edited' }], false)).toBeUndefined()
    expect(views.resultContent('patch', [{ type: 'text', text: 'Error: not found' }], true)).toEqual([
      { type: 'content', content: { type: 'text', text: 'Error: not found' } },
    ])
  })
})

describe('session updates', () => {
  let seq = 0
  const event = (type: string, data: unknown): SessionEvent =>
    ({ seq: seq++, time: 0, type, data }) as unknown as SessionEvent
  const callId = 'call_1' as ToolCallId
  const history = [
    event('user/message', {
      message: { id: 'm1', role: 'user', source: { kind: 'user' }, content: [{ type: 'text', text: 'fix it' }] },
    }),
    event('user/message', {
      message: {
        id: 'm0',
        role: 'user',
        source: { kind: 'plugin', plugin: 'x' },
        content: [{ type: 'text', text: 'injected' }],
      },
    }),
    event('assistant/message', {
      turn: 1,
      step: 1,
      finish: 'tool-calls',
      message: {
        id: 'm2',
        role: 'assistant',
        source: { kind: 'model', provider: 'p', model: 'm' },
        content: [
          { type: 'reasoning', text: 'hmm' },
          { type: 'text', text: 'Looking.' },
          { type: 'tool-call', id: callId, name: 'read', arguments: '{"file_path":"a.txt"}' },
        ],
      },
    }),
    event('tool/call', { turn: 1, step: 1, callId, name: 'read', arguments: '{"file_path":"a.txt"}' }),
    event('tool/result', {
      turn: 1,
      step: 1,
      callId,
      name: 'read',
      error: { code: 'FS_NOT_FOUND', message: 'nope' },
      message: {
        id: 'm3',
        role: 'user',
        source: { kind: 'tool', name: 'read' },
        content: [
          {
            type: 'tool-result',
            toolCallId: callId,
            isError: true,
            content: [{ type: 'text', text: 'a.txt does not exist.' }],
          },
        ],
      },
    }),
    event('todo/write', { todos: [{ content: 'Find a.txt', status: 'in_progress' }, { content: 'bogus' }] }),
    event('session/title', { title: 'Fixing it', source: 'model' }),
  ]

  it('replays a history: user and agent messages, each tool call with its final status, the plan and the title', () => {
    const updates = new SessionUpdates(new ToolViews('/work', tools))
    expect(history.flatMap((e) => updates.replay(e))).toEqual<SessionUpdate[]>([
      { sessionUpdate: 'user_message_chunk', content: { type: 'text', text: 'fix it' } },
      { sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: 'hmm' } },
      { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'Looking.' } },
      {
        sessionUpdate: 'tool_call',
        toolCallId: callId,
        title: 'Read a.txt',
        kind: 'read',
        status: 'pending',
        locations: [{ path: '/work/a.txt' }],
        rawInput: { file_path: 'a.txt' },
      },
      {
        sessionUpdate: 'tool_call_update',
        toolCallId: callId,
        status: 'failed',
        content: [{ type: 'content', content: { type: 'text', text: 'a.txt does not exist.' } }],
      },
      { sessionUpdate: 'plan', entries: [{ content: 'Find a.txt', status: 'in_progress', priority: 'medium' }] },
      { sessionUpdate: 'session_info_update', title: 'Fixing it' },
    ])
  })

  it('live, leaves text to the stream and announces calls once', () => {
    const updates = new SessionUpdates(new ToolViews('/work', tools))
    const live = history.slice(0, 4).flatMap((e) => updates.live(e))
    expect(live.map((u) => u.sessionUpdate)).toEqual(['tool_call'])
    expect(updates.delta({ turn: 1, step: 1, kind: 'text', index: 1, delta: 'Lo' })).toEqual([
      { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'Lo' } },
    ])
    expect(updates.delta({ turn: 1, step: 1, kind: 'tool-arguments', index: 2, delta: '{' })).toEqual([])
    expect(updates.started(callId)).toEqual([
      { sessionUpdate: 'tool_call_update', toolCallId: callId, status: 'in_progress' },
    ])
  })
})
