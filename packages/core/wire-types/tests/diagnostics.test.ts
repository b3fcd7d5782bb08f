import { describe, expect, it } from 'vitest'
import { diagnosticLine, type FileDiagnostic, resultDiagnostics } from '../src/index.ts'

const at = { path: '/w/src/a.ts', line: 12, character: 5 }
const message = "Type 'string' is not assignable\n  to type 'number'."
const finding: FileDiagnostic = { ...at, severity: 'error', message, code: '2322', source: 'typescript' }

describe('the diagnostics a tool result carries', () => {
  it('keeps the well-formed findings of meta.diagnostics and drops the rest', () => {
    const meta = { diagnostics: [finding, { ...finding, severity: 'fatal' }, { path: 3 }, null, 'text'] }
    expect(resultDiagnostics(meta)).toEqual([finding])
  })

  it('is undefined for a result without a diagnostics list', () => {
    for (const meta of [undefined, null, [], 'x', {}, { diagnostics: 'none' }])
      expect(resultDiagnostics(meta)).toBe(undefined)
  })

  it("writes one line per finding, TypeScript's codes as tsc spells them, other codes as given", () => {
    expect(diagnosticLine(finding, 'src/a.ts')).toBe(
      "src/a.ts:12:5 error TS2322: Type 'string' is not assignable to type 'number'.",
    )
    const pyright = { ...finding, source: 'Pyright', code: 'reportAttributeAccessIssue', severity: 'warning' as const }
    expect(diagnosticLine(pyright, 'a.py')).toContain('a.py:12:5 warning reportAttributeAccessIssue: ')
    const { code: _none, ...uncoded } = finding
    expect(diagnosticLine(uncoded, 'a.ts')).toMatch(/^a\.ts:12:5 error: Type/)
  })
})
