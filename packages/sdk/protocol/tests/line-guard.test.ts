import { describe, expect, it } from 'vitest'
import { oversizedLineGuard } from '../src/index.ts'

describe('oversizedLineGuard', () => {
  async function through(limit: number, chunks: string[]): Promise<string> {
    const encoder = new TextEncoder()
    const source = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const chunk of chunks) controller.enqueue(encoder.encode(chunk))
        controller.close()
      },
    })
    let out = ''
    const decoder = new TextDecoder()
    for await (const piece of source.pipeThrough(
      oversizedLineGuard(limit, '_test/oversized'),
    ) as unknown as AsyncIterable<Uint8Array>)
      out += decoder.decode(piece)
    return out
  }

  it('passes lines through whole, however they arrive, and replaces a long one by an error request with its id', async () => {
    const big = `{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"text":"${'x'.repeat(300)}"}}`
    const out = await through(100, ['{"a":1}\n{"b"', ':2}\n', big.slice(0, 150), `${big.slice(150)}\n`, '{"c":3}'])
    expect(out.split('\n')).toEqual([
      '{"a":1}',
      '{"b":2}',
      JSON.stringify({ jsonrpc: '2.0', id: 7, method: '_test/oversized', params: { bytes: big.length, limit: 100 } }),
      '{"c":3}',
      '',
    ])
  })

  it('gives the error request a null id when the long line shows no top-level id', async () => {
    const big = `{"jsonrpc":"2.0","method":"session/prompt","params":{"id":5,"text":"${'x'.repeat(300)}"}}`
    const out = await through(100, [`${big}\n`])
    expect(JSON.parse(out.split('\n')[0] as string)).toMatchObject({ id: null, method: '_test/oversized' })
  })
})
