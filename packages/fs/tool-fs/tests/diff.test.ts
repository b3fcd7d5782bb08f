import { describe, expect, it } from 'vitest'
import { editDiff, type Replacement } from '../src/index.ts'

function apply(before: string, oldText: string, newText: string): { after: string; replacements: Replacement[] } {
  const replacements: Replacement[] = []
  for (let i = before.indexOf(oldText); i !== -1; i = before.indexOf(oldText, i + oldText.length)) {
    replacements.push({ start: i, oldLength: oldText.length, newLength: newText.length })
  }
  return { after: before.split(oldText).join(newText), replacements }
}

const options = { context: 1, maxLines: 100 }

describe('editDiff', () => {
  it.each([
    {
      what: 'merges two changes on one line into one block',
      before: 'a\nx = x + 1\nb\n',
      change: ['x', 'y'],
      diff: '--- f\n+++ f\n@@ -1,3 +1,3 @@\n a\n-x = x + 1\n+y = y + 1\n b',
    },
    {
      what: 'shows a multi-line replacement that changes the line count',
      before: 'start\nold one\nold two\nend\n',
      change: ['old one\nold two\n', 'new\n'],
      diff: '--- f\n+++ f\n@@ -1,4 +1,3 @@\n start\n-old one\n-old two\n+new\n end',
    },
  ])('$what', ({ before, change: [oldText, newText], diff }) => {
    const { after, replacements } = apply(before, oldText as string, newText as string)
    expect(editDiff('f', before, after, replacements, options)).toBe(diff)
  })

  it('makes separate hunks for far-apart changes and one hunk for close ones', () => {
    const lines = Array.from({ length: 12 }, (_, i) => `l${i + 1}`)
    lines[1] = 'hit'
    lines[3] = 'hit'
    lines[10] = 'hit'
    const before = `${lines.join('\n')}\n`
    const { after, replacements } = apply(before, 'hit', 'HIT')
    expect(editDiff('f', before, after, replacements, options)).toBe(
      [
        '--- f',
        '+++ f',
        '@@ -1,5 +1,5 @@',
        ' l1',
        '-hit',
        '+HIT',
        ' l3',
        '-hit',
        '+HIT',
        ' l5',
        '@@ -10,3 +10,3 @@',
        ' l10',
        '-hit',
        '+HIT',
        ' l12',
      ].join('\n'),
    )
  })

  it('cuts a long diff and says how many lines it left out', () => {
    const before = Array.from({ length: 50 }, () => 'same').join('\n')
    const { after, replacements } = apply(before, 'same', 'diff')
    const diff = editDiff('f', before, after, replacements, { context: 0, maxLines: 10 })
    expect(diff.split('\n')).toHaveLength(11)
    expect(diff).toMatch(/… \(93 more diff lines not shown\)$/)
  })
})
