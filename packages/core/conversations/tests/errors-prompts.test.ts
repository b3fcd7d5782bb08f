import { describe, expect, it } from 'vitest'
import { ConversationError, checkedPrompt, rpcErrorOf } from '../src/index.ts'

const sdkCodes = { notFound: -32001, busy: -32002 }

describe('rpcErrorOf', () => {
  it('gives the protocol codes to an unknown and a busy session, with the session id as data', () => {
    const unknown = new ConversationError('not-found', 'unknown session: s1', { sessionId: 's1' })
    expect(rpcErrorOf(unknown, sdkCodes)).toEqual({
      code: -32001,
      message: 'unknown session: s1',
      data: { sessionId: 's1' },
    })
    const busy = new ConversationError('busy', 'session s1 is running', { sessionId: 's1' })
    expect(rpcErrorOf(busy, { notFound: -32002, busy: -32602 })).toMatchObject({
      code: -32602,
      data: { sessionId: 's1' },
    })
  })

  it('makes a bad or unavailable argument -32602 naming the field by the surface name, after the prefix', () => {
    const bad = new ConversationError('invalid', 'names no preset', { field: 'preset' })
    expect(rpcErrorOf(bad, sdkCodes, { prefix: 'session/new: ', rename: { preset: 'permissionPreset' } })).toEqual({
      code: -32602,
      message: 'session/new: permissionPreset: names no preset',
      data: { field: 'permissionPreset', issues: [{ field: 'permissionPreset', message: 'names no preset' }] },
    })
    const missing = new ConversationError('unavailable', 'compaction is not available')
    expect(rpcErrorOf(missing, sdkCodes)).toEqual({ code: -32602, message: 'compaction is not available' })
  })
})

describe('checkedPrompt', () => {
  it('makes a user message of a prompt within the limit, text or text and an image', () => {
    expect(checkedPrompt('hello', 5, 'maxPromptBytes')).toMatchObject({
      role: 'user',
      source: { kind: 'user' },
      content: [{ type: 'text', text: 'hello' }],
    })
    const image = { type: 'image' as const, mediaType: 'image/png', data: 'AAAA' }
    expect(checkedPrompt([{ type: 'text', text: '' }, image], 4, 'limit').content).toEqual([
      { type: 'text', text: '' },
      image,
    ])
  })

  it('refuses a prompt over the limit naming the setting, and an empty one, both naming content', () => {
    const refusal = (run: () => unknown) => {
      try {
        run()
      } catch (error) {
        return error
      }
      throw new Error('not refused')
    }
    expect(refusal(() => checkedPrompt('héllo', 5, 'maxPromptBytes'))).toMatchObject({
      kind: 'invalid',
      message: 'the prompt is 6 bytes, more than the limit of 5 (maxPromptBytes)',
      details: { field: 'content' },
    })
    expect(refusal(() => checkedPrompt(' \n', 100, 'maxPromptBytes'))).toMatchObject({
      kind: 'invalid',
      message: 'the prompt is empty',
      details: { field: 'content' },
    })
  })
})
