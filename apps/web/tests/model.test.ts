import type { SessionEvent } from '@dsh/web-client'
import { Marked } from 'marked'
import { describe, expect, it } from 'vitest'
import { parseCommand } from '../src/lib/commands.ts'
import { additionDiff, parseUnifiedDiff } from '../src/lib/diff.ts'
import { plainParagraphs } from '../src/lib/plain-markdown.ts'
import { insertMention, triggerAt } from '../src/lib/triggers.ts'
import { ConversationModel } from '../src/model/conversation.ts'

let seq = 0
function event(type: string, data: unknown): SessionEvent {
  return { seq: seq++, time: 1000 + seq * 100, type, data } as SessionEvent
}
const model = (name = 'deepseek-chat') => ({ kind: 'model', provider: 'deepseek', model: name })
const user = (text: string) => event('user/message', { message: { id: 'u', role: 'user', content: [{ type: 'text', text }], source: { kind: 'user' } } })

describe('ConversationModel', () => {
  it('turns streamed deltas into rows that keep their keys when the reply lands', () => {
    seq = 0
    const m = new ConversationModel()
    m.applyEvent(event('turn/start', { turn: 1 }))
    m.applyEvent(user('hi'))
    m.applyDelta({ turn: 1, step: 1, kind: 'reasoning', index: 0, delta: 'Think' })
    m.applyDelta({ turn: 1, step: 1, kind: 'text', index: 1, delta: 'Hel' })
    m.applyDelta({ turn: 1, step: 1, kind: 'text', index: 1, delta: 'lo' })
    const streaming = m.snapshot()
    expect(streaming.running).toBe(true)
    expect(streaming.nodes.map((n) => [n.kind, n.key])).toEqual([
      ['user', 'e:1'],
      ['reasoning', 'm:1:1:0'],
      ['text', 'm:1:1:1'],
    ])
    expect(streaming.nodes[2]).toMatchObject({ text: 'Hello', streaming: true })
    const userRow = streaming.nodes[0]

    m.applyEvent(
      event('assistant/message', {
        turn: 1,
        step: 1,
        finish: 'stop',
        usage: { inputTokens: 1_000_000, outputTokens: 1_000_000, cacheReadTokens: 0 },
        message: { id: 'a', role: 'assistant', source: model(), content: [{ type: 'reasoning', text: 'Think.' }, { type: 'text', text: 'Hello!' }] },
      }),
    )
    m.applyEvent(event('turn/end', { turn: 1, reason: 'completed' }))
    const done = m.snapshot()
    expect(done.nodes.map((n) => n.key)).toEqual(['e:1', 'm:1:1:0', 'm:1:1:1', `turn:1:${seq - 1}`])
    expect(done.nodes[2]).toMatchObject({ text: 'Hello!', streaming: false })
    expect(done.nodes[0]).toBe(userRow)
    expect(done.nodes[3]).toMatchObject({ kind: 'turn-end', reason: 'completed', cost: 0.7, durationMs: 300 })
    expect(done.running).toBe(false)
    expect(m.snapshot()).toBe(done)
  })

  it('follows a tool call from arguments to result, with the permission decision, and ignores repeated events', () => {
    seq = 0
    const m = new ConversationModel()
    m.applyEvent(event('turn/start', { turn: 1 }))
    m.applyDelta({ turn: 1, step: 1, kind: 'tool-arguments', index: 0, delta: '{"path":' })
    expect(m.snapshot().nodes[0]).toMatchObject({ kind: 'tool', status: 'streaming', args: '{"path":' })
    const call = { type: 'tool-call', id: 'c1', name: 'edit', arguments: '{"path":"a.txt"}' }
    m.applyEvent(event('assistant/message', { turn: 1, step: 1, finish: 'tool-calls', message: { id: 'a', role: 'assistant', source: model(), content: [call] } }))
    const toolCall = event('tool/call', { turn: 1, step: 1, callId: 'c1', name: 'edit', arguments: call.arguments })
    m.applyEvent(toolCall)
    expect(m.snapshot().nodes).toHaveLength(1)
    expect(m.snapshot().nodes[0]).toMatchObject({ key: 'm:1:1:0', status: 'running', name: 'edit' })
    m.applyEvent(event('permission/decision', { callId: 'c1', tool: 'edit', preset: 'read-only', decision: 'ask', reason: 'writes', answer: 'reject' }))
    m.applyEvent(
      event('tool/result', {
        turn: 1,
        step: 1,
        callId: 'c1',
        name: 'edit',
        error: { code: 'PERMISSION_REJECTED', message: 'no' },
        message: { id: 'r', role: 'user', source: { kind: 'tool', name: 'edit' }, content: [{ type: 'tool-result', toolCallId: 'c1', isError: true, content: [{ type: 'text', text: 'rejected' }] }] },
      }),
    )
    m.applyEvent(toolCall)
    const [tool] = m.snapshot().nodes
    expect(tool).toMatchObject({ status: 'error', result: 'rejected', decision: { decision: 'ask', answer: 'reject' } })
    expect(m.snapshot().nodes).toHaveLength(1)
  })

  it('drops the drafts of a failed attempt, shows the retry, and marks streaming rows partial after a reconnect', () => {
    seq = 0
    const m = new ConversationModel()
    m.applyEvent(event('turn/start', { turn: 1 }))
    m.applyDelta({ turn: 1, step: 1, kind: 'text', index: 0, delta: 'broken' })
    m.applyEvent(event('assistant/attempt', { turn: 1, step: 1, attempt: 1, error: { code: 'SERVER', message: 'busy' } }))
    m.applyEvent(event('llm/retry', { turn: 1, step: 1, attempt: 1, delayMs: 1500, error: { code: 'SERVER', message: 'Server busy.' } }))
    expect(m.snapshot().nodes.map((n) => n.kind)).toEqual(['notice'])
    expect(m.snapshot().nodes[0]).toMatchObject({ code: 'SERVER', text: 'Server busy. Retrying in 1.5 s (attempt 2).' })
    m.applyDelta({ turn: 1, step: 1, kind: 'text', index: 0, delta: 'again' })
    m.markResumed()
    expect(m.snapshot().nodes[1]).toMatchObject({ text: 'again', partial: true })
    m.applyEvent(event('turn/end', { turn: 1, reason: 'error', error: { code: 'AUTH', message: 'bad key', status: 401 } }))
    expect(m.snapshot().nodes.at(-1)).toMatchObject({ kind: 'turn-end', error: { code: 'AUTH', status: 401 } })
  })
})

describe('composer helpers', () => {
  it('recognises commands, and leaves other slash text for the model', () => {
    expect(parseCommand('/model deepseek-v4-pro')).toEqual({ name: 'model', arg: 'deepseek-v4-pro' })
    expect(parseCommand(' /compact ')).toEqual({ name: 'compact', arg: '' })
    expect(parseCommand('/review this file')).toBeUndefined()
    expect(parseCommand('use /compact later')).toBeUndefined()
  })

  it('finds the trigger at the caret and inserts a mention', () => {
    expect(triggerAt('/mo', 3)).toEqual({ kind: 'command', query: 'mo' })
    expect(triggerAt('/model deep', 11)).toEqual({ kind: 'model', query: 'deep' })
    const mention = triggerAt('look at @src/ma please', 15)
    expect(mention).toEqual({ kind: 'mention', query: 'src/ma', start: 8, end: 15 })
    expect(insertMention('look at @src/ma please', mention as never, 'src/main.ts')).toEqual({ text: 'look at @src/main.ts  please', caret: 21 })
    expect(triggerAt('mail me@example.com', 19)).toBeUndefined()
  })
})

describe('diffs', () => {
  it('numbers the lines of a unified diff after a preamble', () => {
    const diff = parseUnifiedDiff('Edited a.txt.\n\n--- a.txt\n+++ a.txt\n@@ -2,3 +2,3 @@\n one\n-two\n+TWO\n three')
    expect(diff).toMatchObject({ path: 'a.txt', added: 1, removed: 1 })
    expect(diff?.lines.map((l) => [l.kind, l.oldNo, l.newNo])).toEqual([
      ['hunk', undefined, undefined],
      ['context', 2, 2],
      ['del', 3, undefined],
      ['add', undefined, 3],
      ['context', 4, 4],
    ])
    expect(parseUnifiedDiff('no diff here')).toBeUndefined()
    expect(additionDiff('n.txt', 'a\nb\n')).toMatchObject({ added: 2, removed: 0 })
  })
})

describe('plain paragraphs', () => {
  // The same HTML and block keys as the Markdown engine (marked with GFM, as lib/markdown.ts uses it).
  const engine = (text: string) => {
    const marked = new Marked({ gfm: true })
    const tokens = marked.lexer(text)
    let offset = 0
    const blocks: Array<{ key: string; html: string }> = []
    for (const token of tokens) {
      if (token.type !== 'space') blocks.push({ key: `${offset}`, html: marked.parser(Object.assign([token], { links: tokens.links })).replaceAll('&quot;', '&#34;') })
      offset += token.raw.length
    }
    return blocks
  }

  it('renders text with nothing to interpret exactly as the Markdown engine does', () => {
    for (const text of [
      'The agent reads files and runs the tests.',
      'First line\nsecond line, with (parentheses) and 100% "quotes" it\'s fine.\n\n\nA new paragraph: a - b = c + d / e; why? yes!',
      'Trailing newline\n',
      '\nLeading newline then text',
      '',
    ]) {
      expect(plainParagraphs(text), text).toEqual(engine(text))
    }
  })

  it('leaves anything Markdown would interpret to the engine', () => {
    for (const text of [
      'some **bold** text',
      'a `code` span',
      'see https://example.com',
      'see www.example.com',
      'mail me@example.com',
      '- a list',
      '1. a list',
      '# heading',
      'Heading\n===',
      '    indented code',
      'hard break  \nnext line',
      'a <b>tag</b>',
      'an &amp; entity',
      'a [link](x)',
      'a | table',
      'under_score',
      'back\\slash',
      'tilde ~strike~',
      'Ünïcode letters',
    ]) {
      expect(plainParagraphs(text), text).toBeUndefined()
    }
  })
})
