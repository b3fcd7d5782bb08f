import type * as acp from '@agentclientprotocol/sdk/unstable'
import type { Agent } from '@dsh/agent'
import type { SessionSettings } from '@dsh/conversations'
import { assertNever, type Context } from '@dsh/cordis'
import { REASONING_EFFORTS } from '@dsh/llm'
import { NETWORK_MODES, type NetworkMode } from '@dsh/permission'
import type { ReasoningEffort } from '@dsh/wire-types'

/** The ids of dsh's session config options. */
const CONFIG_IDS = ['model', 'reasoning_effort', 'mode', 'network'] as const
type ConfigId = (typeof CONFIG_IDS)[number]

/** The value of `reasoning_effort` while the session names none (the route's own default applies). */
const DEFAULT_EFFORT = 'default'

const EFFORT_NAMES: Record<ReasoningEffort, string> = { off: 'Off', low: 'Low', high: 'High', max: 'Max' }
const NETWORK_NAMES: Record<NetworkMode, string> = {
  off: 'Off: sandboxed commands have no network',
  proxy: 'Proxy: through the filtering proxy',
  on: 'On: sandboxed commands reach the network',
}

type SelectOption = Extract<acp.SessionConfigOption, { type: 'select' }>

/**
 * The session's config options as ACP shows them: the model (from the routes
 * of `ctx.llm`; left out when no route lists models), the reasoning effort,
 * the mode (the same ids as the session modes: a permission preset, or plan)
 * and the network of sandboxed commands. Each is a select with its current value.
 */
export function configOptions(ctx: Context, agent: Agent, modes: acp.SessionModeState): acp.SessionConfigOption[] {
  const options: SelectOption[] = []
  const models = ctx.conversations.models()
  if (models.length) {
    const ids = [...new Set(models.map((m) => m.id))]
    options.push({
      type: 'select',
      id: 'model',
      name: 'Model',
      category: 'model',
      currentValue: agent.options.model,
      options: (ids.includes(agent.options.model) ? ids : [agent.options.model, ...ids]).map((id) => ({
        value: id,
        name: id,
      })),
    })
  }
  const effort = agent.options.reasoningEffort
  options.push({
    type: 'select',
    id: 'reasoning_effort',
    name: 'Reasoning effort',
    category: 'thought_level',
    currentValue: effort ?? DEFAULT_EFFORT,
    options: [
      ...(effort ? [] : [{ value: DEFAULT_EFFORT, name: "The model's default" }]),
      ...REASONING_EFFORTS.map((value) => ({ value, name: EFFORT_NAMES[value] })),
    ],
  })
  options.push({
    type: 'select',
    id: 'mode',
    name: 'Mode',
    category: 'mode',
    currentValue: modes.currentModeId,
    options: modes.availableModes.map((m) => ({
      value: m.id,
      name: m.name,
      ...(m.description ? { description: m.description } : {}),
    })),
  })
  options.push({
    type: 'select',
    id: 'network',
    name: 'Network',
    category: '_network',
    currentValue: ctx.permission.network(agent.id),
    options: NETWORK_MODES.map((value) => ({ value, name: NETWORK_NAMES[value] })),
  })
  return options
}

/** Why a `session/set_config_option` cannot be applied: the field at fault and the message. */
export class ConfigOptionProblem extends Error {
  constructor(
    readonly field: 'configId' | 'value',
    text: string,
  ) {
    super(text)
  }
}

/**
 * What `session/set_config_option` asks for, checked against the options the
 * session shows: the option must exist and the value must be one of its values.
 * `mode` is answered by the caller (it is the session mode); the others map to
 * `ctx.conversations.configure` settings. A no-op (`default` effort while unset) is `{}`.
 */
export function requestedSetting(
  options: acp.SessionConfigOption[],
  configId: unknown,
  value: unknown,
): { id: ConfigId; value: string; settings: SessionSettings } {
  const option = options.find((o) => o.id === configId)
  if (option?.type !== 'select')
    throw new ConfigOptionProblem(
      'configId',
      `unknown config option ${JSON.stringify(configId)}; the options are ${options.map((o) => o.id).join(', ')}`,
    )
  const values = option.options.flatMap((o) => ('group' in o ? o.options : [o])).map((o) => o.value)
  if (typeof value !== 'string' || !values.includes(value))
    throw new ConfigOptionProblem(
      'value',
      `${option.id} cannot be ${JSON.stringify(value)}; it is one of ${values.join(', ')}`,
    )
  const id = option.id as ConfigId
  switch (id) {
    case 'model':
      return { id, value, settings: { model: value } }
    case 'reasoning_effort':
      return { id, value, settings: value === DEFAULT_EFFORT ? {} : { reasoningEffort: value as ReasoningEffort } }
    case 'network':
      return { id, value, settings: { network: value as NetworkMode } }
    case 'mode':
      return { id, value, settings: {} }
    default:
      return assertNever(id, 'config option id')
  }
}
