import { describe, expect, it } from 'vitest'
import { preloadsOf, splitNodeOptions } from '../src/snapshot/preloads.ts'

// A process started from the startup snapshot runs the preloads itself (Node
// skips them for a snapshot's main function); these are the ones it finds.
describe('NODE_OPTIONS preloads', () => {
  it('splits NODE_OPTIONS on spaces, keeping double-quoted words whole', () => {
    expect(splitNodeOptions('  --import=a.mjs   -r "b c.cjs" --import="d \\"e\\".mjs"')).toEqual([
      '--import=a.mjs',
      '-r',
      'b c.cjs',
      '--import=d "e".mjs',
    ])
    expect(splitNodeOptions('')).toEqual([])
  })

  it('takes --import and --require in both spellings, NODE_OPTIONS first, and nothing else', () => {
    expect(
      preloadsOf(
        ['--snapshot-blob', 'x.blob', '--import', './c.mjs'],
        '--require=a.cjs --no-warnings -r b.cjs --import',
      ),
    ).toEqual([
      { kind: 'require', specifier: 'a.cjs' },
      { kind: 'require', specifier: 'b.cjs' },
      { kind: 'import', specifier: './c.mjs' },
    ])
  })
})
