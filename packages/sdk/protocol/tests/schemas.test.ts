import { describe, expect, it } from 'vitest'
import { ClientMethods, parseParams, RpcError, schemas } from '../src/index.ts'

const fail = (method: keyof typeof ClientMethods, params: unknown) => {
  try {
    parseParams(method, ClientMethods[method].params, params)
  } catch (error) {
    expect(error).toBeInstanceOf(RpcError)
    return error as RpcError
  }
  throw new Error(`${method} accepted ${JSON.stringify(params)}`)
}

describe('params', () => {
  it('name the first bad field in the message and in data.field', () => {
    expect(fail('session/new', { cwd: 'relative' })).toMatchObject({
      code: -32602,
      message: 'session/new: cwd: must be an absolute path',
      data: { field: 'cwd' },
    })
    expect(fail('session/new', {}).data).toMatchObject({ field: 'cwd' })
    expect(fail('session/new', { cwd: '/x', permissionPreset: 'yolo' }).data).toMatchObject({
      field: 'permissionPreset',
    })
    expect(fail('session/prompt', { sessionId: 's', content: 1 }).data).toMatchObject({ field: 'content' })
    expect(fail('session/prompt', { sessionId: 's', content: [] }).data).toMatchObject({ field: 'content' })
    expect(fail('session/prompt', { sessionId: 's', content: [{ type: 'text' }] }).data).toMatchObject({
      field: 'content.0.text',
    })
    expect(fail('session/prompt', { sessionId: 's', content: [{ type: 'audio' }] }).data).toMatchObject({
      field: 'content.0.type',
    })
    expect(fail('session/prompt', { sessionId: 's', content: 1 }).message).toContain(
      'must be a string or a list of content blocks',
    )
    expect(fail('session/fork', { sessionId: 's', turn: 0 }).data).toMatchObject({ field: 'turn' })
    expect(fail('session/events', { sessionId: 's', afterSeq: 1.5 }).data).toMatchObject({ field: 'afterSeq' })
    expect(fail('session/resume', { sessionId: '../x' }).data).toMatchObject({ field: 'sessionId' })
    expect(fail('session/resume', { sessionId: 'a/b' }).data).toMatchObject({ field: 'sessionId' })
  })

  it('refuse params that are not an object, and take missing ones as {}', () => {
    expect(fail('session/list', [1])).toMatchObject({ code: -32602, message: 'session/list: params must be an object' })
    expect(fail('session/list', null)).toMatchObject({ code: -32602 })
    expect(parseParams('session/list', ClientMethods['session/list'].params, undefined)).toEqual({})
    expect(parseParams('shutdown', ClientMethods.shutdown.params, undefined)).toEqual({})
  })

  it('accept text and image prompts', () => {
    const image = { type: 'image', mediaType: 'image/png', data: Buffer.from('png').toString('base64') }
    expect(schemas.PromptContent.parse([{ type: 'text', text: 'look' }, image])).toHaveLength(2)
    expect(schemas.PromptContent.safeParse([{ ...image, mediaType: 'image/tiff' }]).success).toBe(false)
  })
})
