import type { Agent } from '@dsh/agent'
import { assertNever, type Context } from '@dsh/cordis'
import { REASONING_EFFORTS } from '@dsh/llm'
import { NETWORK_MODES, type NetworkMode, PRESETS, type PermissionPreset } from '@dsh/permission'
import type {} from '@dsh/plan-mode'
import type { ReasoningEffort } from '@dsh/wire-types'
import { invalid } from './errors.ts'
import type { SessionSettings } from './service.ts'

/** The settings a session offers as a choice of values. */
export type SessionOptionId = 'model' | 'reasoning_effort' | 'mode' | 'network'

export interface OptionChoice {
  value: string
  name: string
  description?: string
}

/** One setting of a session: its value now and the values it may take, for a surface's picker. */
export interface SessionOption {
  id: SessionOptionId
  name: string
  current: string
  choices: OptionChoice[]
}

/** The mode value that is plan mode (the others are the permission presets). */
export const PLAN_MODE = 'plan'
/** The value of `reasoning_effort` while the session names none (the route's own default applies). */
const DEFAULT_EFFORT = 'default'

const EFFORT_NAMES: Record<ReasoningEffort, string> = { off: 'Off', low: 'Low', high: 'High', max: 'Max' }
const PRESET_NAMES: Record<PermissionPreset, string> = {
  'read-only': 'Read only',
  'workspace-write': 'Workspace write',
  'danger-full-access': 'Full access',
}
const NETWORK_NAMES: Record<NetworkMode, string> = {
  off: 'Off: sandboxed commands have no network',
  proxy: 'Proxy: through the filtering proxy',
  on: 'On: sandboxed commands reach the network',
}

/**
 * The session's settings as choices: the model (from the routes of `ctx.llm`;
 * left out when no route lists models), the reasoning effort, and with the
 * permission plugin the mode (a permission preset, or plan with the plan-mode
 * plugin) and the network of sandboxed commands.
 */
export function sessionOptions(ctx: Context, agent: Agent): SessionOption[] {
  const options: SessionOption[] = []
  const ids = [...new Set(ctx.conversations.models().map((m) => m.id))]
  const { model, reasoningEffort: effort } = agent.options
  if (ids.length) {
    const choices = (ids.includes(model) ? ids : [model, ...ids]).map((id) => ({ value: id, name: id }))
    options.push({ id: 'model', name: 'Model', current: model, choices })
  }
  options.push({
    id: 'reasoning_effort',
    name: 'Reasoning effort',
    current: effort ?? DEFAULT_EFFORT,
    choices: [
      ...(effort ? [] : [{ value: DEFAULT_EFFORT, name: "The model's default" }]),
      ...REASONING_EFFORTS.map((value) => ({ value, name: EFFORT_NAMES[value] })),
    ],
  })
  const permission = ctx.get('permission')
  if (!permission) return options
  const preset = permission.preset(agent.id)
  const asks = permission.approvalPolicy() === 'ask' ? 'asks before' : 'refuses'
  const describe: Record<PermissionPreset, string> = {
    'read-only': `Reads anywhere; ${asks} any write or escalated command. Commands run in a read-only sandbox.`,
    'workspace-write': `Reads anywhere and writes inside the workspace; ${asks} anything else. Commands run sandboxed.`,
    'danger-full-access': 'Does everything without asking; commands run unconfined.',
  }
  const planMode = ctx.get('planMode')
  const plan = planMode
    ? [
        {
          value: PLAN_MODE,
          name: 'Plan',
          description: `Only read-only tools run until you approve the agent's plan; then it works under ${PRESET_NAMES[preset]}.`,
        },
      ]
    : []
  options.push({
    id: 'mode',
    name: 'Mode',
    current: planMode?.isActive(agent.id) ? PLAN_MODE : preset,
    choices: [...PRESETS.map((id) => ({ value: id, name: PRESET_NAMES[id], description: describe[id] })), ...plan],
  })
  options.push({
    id: 'network',
    name: 'Network',
    current: permission.network(agent.id),
    choices: NETWORK_MODES.map((value) => ({ value, name: NETWORK_NAMES[value] })),
  })
  return options
}

/**
 * The `configure` settings that give option `id` the value `value`, checked
 * against the options the session shows: an unknown option is `invalid` with
 * field `configId`, a value it does not list `invalid` with field `value`.
 * A preset mode leaves plan mode; plan mode keeps the preset for after the
 * plan. The `default` effort while none is set changes nothing (`{}`).
 */
export function optionSettings(options: readonly SessionOption[], id: unknown, value: unknown): SessionSettings {
  const option = options.find((o) => o.id === id)
  if (!option)
    throw invalid(
      'configId',
      `unknown config option ${JSON.stringify(id)}; the options are ${options.map((o) => o.id).join(', ')}`,
    )
  const values = option.choices.map((c) => c.value)
  if (typeof value !== 'string' || !values.includes(value))
    throw invalid('value', `${option.id} cannot be ${JSON.stringify(value)}; it is one of ${values.join(', ')}`)
  switch (option.id) {
    case 'model':
      return { model: value }
    case 'reasoning_effort':
      return value === DEFAULT_EFFORT ? {} : { reasoningEffort: value as ReasoningEffort }
    case 'network':
      return { network: value as NetworkMode }
    case 'mode':
      if (value === PLAN_MODE) return { plan: true }
      return { preset: value as PermissionPreset, ...(values.includes(PLAN_MODE) ? { plan: false } : {}) }
    default:
      return assertNever(option.id, 'session option id')
  }
}
