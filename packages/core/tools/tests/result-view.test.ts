import { describe, expect, it } from 'vitest'
import { presentCall } from '../src/describe.ts'
import { codeFence, presentResult } from '../src/result-view.ts'
import type { ToolPresentation } from '../src/types.ts'

const cwd = '/work/project'
const shell: ToolPresentation = { kind: 'execute', view: 'terminal' }
const reader: ToolPresentation = { kind: 'read', view: 'read' }
const writer: ToolPresentation = {
  kind: 'edit',
  view: 'diff',
  change: (args) => ({ path: String(args.path), oldText: null, newText: String(args.content) }),
}
const call = (presentation: ToolPresentation, args: object) =>
  presentCall('t', { presentation }, JSON.stringify(args), cwd)

describe('presentResult', () => {
  it('joins the text, keeps the images, and marks terminal and read output as code only on success', () => {
    const content = [
      { type: 'text' as const, text: 'one' },
      { type: 'image' as const, mediaType: 'image/png', data: 'AAAA' },
      { type: 'text' as const, text: 'two' },
    ]
    expect(presentResult(call(shell, {}), { content, failed: false }, cwd)).toEqual({
      text: 'one\ntwo',
      code: 'console',
      images: [{ mediaType: 'image/png', data: 'AAAA' }],
    })
    expect(presentResult(call(reader, {}), { content, failed: false }, cwd).code).toBe('')
    expect(presentResult(call(shell, {}), { content, failed: true }, cwd)).not.toHaveProperty('code')
  })

  it('gives a successful diff call the real old text from its meta, and its diagnostics as lines', () => {
    const shown = call(writer, { path: 'a.ts', content: 'new' })
    const meta = {
      oldText: 'old',
      diagnostics: [{ path: '/work/project/a.ts', line: 2, character: 5, severity: 'error', message: 'bad' }],
    }
    expect(presentResult(shown, { content: [], failed: false, meta }, cwd)).toEqual({
      text: '',
      images: [],
      change: { path: '/work/project/a.ts', oldText: 'old', newText: 'new' },
      diagnostics: 'Language server: 1 error\na.ts:2:5 error: bad',
    })
    expect(presentResult(shown, { content: [], failed: false }, cwd)).toEqual({ text: '', images: [] })
    expect(presentResult(shown, { content: [], failed: true, meta }, cwd)).toEqual({ text: '', images: [] })
  })

  it('fences code with more backticks than the body holds in a row, the last newline dropped', () => {
    expect(codeFence('ok\n', 'console')).toBe('```console\nok\n```')
    expect(codeFence('a ``` b', '')).toBe('````\na ``` b\n````')
  })
})
