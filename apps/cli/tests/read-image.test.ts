import { mkdir, symlink, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { reply } from '@dsh/llm-mock'
import { describe, expect, it } from 'vitest'
import { toolTexts, useMockedHeadless } from './support/mocked-headless.ts'

const t = useMockedHeadless()

// A 1x1 transparent PNG.
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
)
const VISION = ['--model', 'deepseek-v4-flash-vision-exp']

/** The image parts of the user messages the model was sent in request `index`. */
function imageUrls(index: number): string[] {
  const messages = t.mock.requests[index]?.body.messages as Array<{ role: string; content: unknown }>
  return messages
    .filter((m) => m.role === 'user' && Array.isArray(m.content))
    .flatMap((m) => m.content as Array<{ type: string; image_url?: { url: string } }>)
    .flatMap((part) => (part.type === 'image_url' && part.image_url ? [part.image_url.url] : []))
}

const toolNames = (index: number) =>
  (t.mock.requests[index]?.body.tools as Array<{ function: { name: string } }>).map((tool) => tool.function.name)

describe('read_image through the real bin', { timeout: 60_000 }, () => {
  it('puts an image file (told by its content, no extension needed) into the next request as an image', async () => {
    await writeFile(path.join(t.work, 'screenshot'), PNG)
    t.mock.enqueue(
      reply.toolCalls([{ name: 'read_image', arguments: { file_path: 'screenshot' } }]),
      reply.text('A dot.'),
    )
    const result = await t.headless([...VISION, 'what is in screenshot?'])
    expect(result.code, result.stderr).toBe(0)
    expect(toolTexts(t.mock.requests[1])).toEqual(['screenshot: PNG image, 70 bytes.'])
    expect(toolNames(0)).toContain('read_image')
    expect(imageUrls(1)).toEqual([`data:image/png;base64,${PNG.toString('base64')}`])
  })

  it('refuses a file that is not an image; a model without image input is not offered the tool', async () => {
    await writeFile(path.join(t.work, 'notes.png'), 'just text, despite the name\n')
    await writeFile(path.join(t.work, 'pic.png'), PNG)
    t.mock.enqueue(reply.toolCalls([{ name: 'read_image', arguments: { file_path: 'notes.png' } }]), reply.text('ok'))
    expect((await t.headless([...VISION, 'look'])).code).toBe(0)
    expect(toolTexts(t.mock.requests[1])[0]).toContain(
      'notes.png is not a PNG, JPEG, GIF or WebP image (judged by its content). Use the read tool for text files.',
    )
    expect(imageUrls(1)).toEqual([])

    t.mock.reset()
    t.mock.enqueue(reply.toolCalls([{ name: 'read_image', arguments: { file_path: 'pic.png' } }]), reply.text('ok'))
    expect((await t.headless(['look'])).code).toBe(0)
    // A text-only model is not offered the tool, and a call to it anyway is refused.
    expect(toolNames(0)).not.toContain('read_image')
    expect(toolTexts(t.mock.requests[1])[0]).toMatch(/read_image/)
    expect(imageUrls(1)).toEqual([])
  })

  it('an image on the deny-read list outside the workspace is refused, directly and through a symlink', async () => {
    const outside = path.join(t.root, 'private')
    await mkdir(outside)
    await writeFile(path.join(outside, 'id.png'), PNG)
    await symlink(path.join(outside, 'id.png'), path.join(t.work, 'innocent.png'))
    const patch = path.join(t.root, 'deny.yml')
    await writeFile(patch, `- id: fs\n  config:\n    denyRead: [${JSON.stringify(outside)}]\n`)
    t.mock.enqueue(
      reply.toolCalls([
        { name: 'read_image', arguments: { file_path: path.join(outside, 'id.png') } },
        { name: 'read_image', arguments: { file_path: 'innocent.png' } },
      ]),
      reply.text('ok'),
    )
    const result = await t.headless(['--patch', patch, ...VISION, 'look'])
    expect(result.code, result.stderr).toBe(0)
    const texts = toolTexts(t.mock.requests[1])
    expect(texts).toHaveLength(2)
    for (const text of texts) expect(text).toContain('deny-read list')
    expect(imageUrls(1)).toEqual([])
  })
})
