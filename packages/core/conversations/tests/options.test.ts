import { describe, expect, it } from 'vitest'
import { ConversationError, optionSettings, PLAN_MODE, type SessionOption } from '../src/index.ts'

const choices = (...values: string[]) => values.map((value) => ({ value, name: value }))
const options = (withPlan: boolean): SessionOption[] => [
  { id: 'model', name: 'Model', current: 'm1', choices: choices('m1', 'm2') },
  { id: 'reasoning_effort', name: 'Reasoning effort', current: 'default', choices: choices('default', 'low', 'max') },
  {
    id: 'mode',
    name: 'Mode',
    current: 'workspace-write',
    choices: choices('read-only', 'workspace-write', ...(withPlan ? [PLAN_MODE] : [])),
  },
  { id: 'network', name: 'Network', current: 'off', choices: choices('off', 'on') },
]

describe('optionSettings', () => {
  it('maps each option to the configure settings it stands for', () => {
    expect(optionSettings(options(true), 'model', 'm2')).toEqual({ model: 'm2' })
    expect(optionSettings(options(true), 'reasoning_effort', 'max')).toEqual({ reasoningEffort: 'max' })
    expect(optionSettings(options(true), 'reasoning_effort', 'default')).toEqual({})
    expect(optionSettings(options(true), 'network', 'on')).toEqual({ network: 'on' })
    expect(optionSettings(options(true), 'mode', PLAN_MODE)).toEqual({ plan: true })
    expect(optionSettings(options(true), 'mode', 'read-only')).toEqual({ preset: 'read-only', plan: false })
    expect(optionSettings(options(false), 'mode', 'read-only')).toEqual({ preset: 'read-only' })
  })

  it('refuses an unknown option naming configId, and a value the option does not list naming value', () => {
    const fail = (id: unknown, value: unknown) => {
      try {
        optionSettings(options(true), id, value)
      } catch (error) {
        return error instanceof ConversationError
          ? { kind: error.kind, ...error.details, message: error.message }
          : error
      }
      return undefined
    }
    expect(fail('temperature', '1')).toEqual({
      kind: 'invalid',
      field: 'configId',
      message: 'unknown config option "temperature"; the options are model, reasoning_effort, mode, network',
    })
    expect(fail('mode', 'yolo')).toMatchObject({
      field: 'value',
      message: expect.stringContaining('mode cannot be "yolo"'),
    })
    expect(fail('model', 42)).toMatchObject({ field: 'value' })
  })
})
