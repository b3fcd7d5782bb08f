import { reply } from '@dsh/llm-mock'
import { describe, expect, it } from 'vitest'
import { type AcpTestClient, useAcpClients } from './support/acp.ts'
import { useMockedHeadless } from './support/mocked-headless.ts'

const t = useMockedHeadless()
const start = useAcpClients(t)

interface Option {
  id: string
  category?: string
  currentValue: string
  options: Array<{ value: string }>
}

const current = (options: Option[]) => Object.fromEntries(options.map((o) => [o.id, o.currentValue]))

const setOption = (client: AcpTestClient, sessionId: string, configId: string, value: string) =>
  client.agent.request<{ configOptions: Option[] }>('session/set_config_option', { sessionId, configId, value })

describe('dsh --profile acp: session config options', { timeout: 90_000 }, () => {
  it('sets the model, effort, mode and network; the model is in the next request and survives session/load', async () => {
    t.mock.enqueue(reply.text('On pro.'))
    const client = start()
    await client.initialize()
    const created = (await client.newSession()) as { sessionId: string; configOptions: Option[] }
    const { sessionId } = created
    expect(created.configOptions.map((o) => [o.id, o.category])).toEqual([
      ['model', 'model'],
      ['reasoning_effort', 'thought_level'],
      ['mode', 'mode'],
      ['network', '_network'],
    ])
    expect(current(created.configOptions)).toMatchObject({ model: 'deepseek-v4-flash', mode: 'workspace-write' })
    expect(created.configOptions[0]?.options.map((o) => o.value)).toContain('deepseek-v4-pro')

    const changed = await setOption(client, sessionId, 'model', 'deepseek-v4-pro')
    expect(current(changed.configOptions).model).toBe('deepseek-v4-pro')
    await setOption(client, sessionId, 'reasoning_effort', 'off')
    const moded = await setOption(client, sessionId, 'mode', 'read-only')
    expect(current(moded.configOptions)).toMatchObject({ mode: 'read-only', reasoning_effort: 'off' })
    const networked = await setOption(client, sessionId, 'network', 'off')
    expect(current(networked.configOptions).network).toBe('off')

    await client.prompt(sessionId, 'which model?')
    const body = t.mock.requests.at(-1)?.body as { model: string; thinking?: { type: string } }
    expect(body.model).toBe('deepseek-v4-pro')
    expect(body.thinking).toEqual({ type: 'disabled' })
    const updates = client.updatesOf(sessionId)
    expect(updates).toContainEqual(
      expect.objectContaining({ sessionUpdate: 'current_mode_update', currentModeId: 'read-only' }),
    )
    const lastConfig = updates.filter((u) => u.sessionUpdate === 'config_option_update').at(-1) as
      | { configOptions: Option[] }
      | undefined
    expect(current(lastConfig?.configOptions ?? [])).toMatchObject({ model: 'deepseek-v4-pro', network: 'off' })
    await client.close()

    // A new process: the session comes back with its settings, and the next request uses its model.
    t.mock.enqueue(reply.text('Still pro.'))
    const again = start()
    await again.initialize()
    const loaded = await again.agent.request<{ configOptions: Option[]; modes: { currentModeId: string } }>(
      'session/load',
      { sessionId, cwd: t.work, mcpServers: [] },
    )
    expect(current(loaded.configOptions)).toMatchObject({
      model: 'deepseek-v4-pro',
      reasoning_effort: 'off',
      mode: 'read-only',
      network: 'off',
    })
    expect(loaded.modes.currentModeId).toBe('read-only')
    await again.prompt(sessionId, 'and now?')
    expect((t.mock.requests.at(-1)?.body as { model: string }).model).toBe('deepseek-v4-pro')
  })

  it('answers an unknown option or value with -32602 naming the field, and changes nothing', async () => {
    t.mock.enqueue(reply.text('Flash.'))
    const client = start()
    await client.initialize()
    const { sessionId } = await client.newSession()
    await expect(setOption(client, sessionId, 'temperature', 'hot')).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining('configId: unknown config option "temperature"'),
    })
    await expect(setOption(client, sessionId, 'model', 'gpt-0')).rejects.toMatchObject({
      code: -32602,
      message: expect.stringMatching(/value: model cannot be "gpt-0"; it is one of .*deepseek-v4-pro/),
    })
    await expect(setOption(client, sessionId, 'mode', 'yolo')).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining('value: mode cannot be "yolo"'),
    })
    await expect(setOption(client, sessionId, 'network', 'sometimes')).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining('value: network cannot be "sometimes"'),
    })
    await expect(setOption(client, 'session-missing', 'model', 'deepseek-v4-pro')).rejects.toMatchObject({
      code: -32002,
    })
    await client.prompt(sessionId, 'which model?')
    expect((t.mock.requests.at(-1)?.body as { model: string }).model).toBe('deepseek-v4-flash')
  })
})
