import { describe, expect, it } from 'vitest'
import { readDshEnv } from '../src/env.ts'

describe('readDshEnv', () => {
  it('maps each DSH_* variable the bundles read to its meaning, trimmed', () => {
    const env = { DSH_MODEL: ' my-model ', DSH_PERMISSION_MODE: 'read-only', DSH_SESSION_TITLES: 'off' }
    expect(readDshEnv(env)).toEqual({ model: 'my-model', permissionMode: 'read-only', sessionTitles: 'off' })
  })

  it('treats blank and missing variables as unset, so the rows keep their Config defaults', () => {
    expect(readDshEnv({ DSH_MODEL: '  ', DSH_PERMISSION_MODE: '' })).toEqual({
      model: undefined,
      permissionMode: undefined,
      sessionTitles: undefined,
    })
  })
})
