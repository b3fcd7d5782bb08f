import type { Context } from '@dsh/cordis'
import { REASONING_EFFORTS } from '@dsh/llm'
import { defineTool, ToolError, toolParameters } from '@dsh/tools'
import { z } from 'zod'
import type { SubagentConfig } from './config.ts'

const listModelsParameters = toolParameters(
  z.object({
    provider: z.string().trim().min(1).optional().describe('A provider id; omit to list the providers.'),
    model: z.string().trim().min(1).optional().describe('An exact model id to inspect; needs provider.'),
  }),
)

/** `list_subagent_models`: the providers and models a subagent may run on, from `ctx.llm`. */
export function listModelsTool(ctx: Context, config: SubagentConfig) {
  const usage = config.modelSelection
    ? "Pass the ids as the subagent tool's provider, model and reasoning_effort."
    : "Children run on your model or their type's configured one; this deployment does not let you pick per call."
  return defineTool({
    name: 'list_subagent_models',
    presentation: { kind: 'read', view: 'generic', title: () => 'List subagent models' },
    description:
      'List the model routes a subagent can use, without changing yours. No arguments: the providers. provider: its ' +
      `advertised models. provider and model: that exact model. The lists are advisory. ${usage}`,
    parameters: listModelsParameters,
    isConcurrencySafe: () => true,
    access: () => ({ kind: 'read', summary: 'list subagent models' }),
    execute: (args, run) => {
      const llm = ctx.get('llm')
      const routes = llm?.listRoutes() ?? []
      const mine = ctx.agents.get(run.sessionId)?.options
      if (args.provider === undefined) {
        if (args.model !== undefined)
          throw new ToolError('INVALID_ARGUMENTS', 'model needs provider: name the provider the model belongs to')
        const lines = routes.map((route) => `- ${route}${route === mine?.provider ? ' (yours)' : ''}`)
        return { content: lines.length ? `Providers:\n${lines.join('\n')}` : 'No model providers are registered.' }
      }
      if (!llm || !routes.includes(args.provider))
        throw new ToolError(
          'UNKNOWN_PROVIDER',
          `there is no model provider "${args.provider}"; known: ${routes.join(', ') || 'none'}`,
        )
      const models = llm.models(args.provider)
      const describe = (id: string, window?: number) =>
        `- ${id}${window ? ` (context ${window} tokens)` : ''}${id === mine?.model && args.provider === mine?.provider ? ' (yours)' : ''}`
      if (args.model === undefined) {
        const lines = models.map((m) => describe(m.id, m.contextWindow))
        return {
          content: lines.length
            ? `Models of ${args.provider}:\n${lines.join('\n')}`
            : `${args.provider} advertises no models; it may still accept a model id you know.`,
        }
      }
      const info = llm.modelInfo(args.provider, args.model)
      const efforts = `Reasoning efforts: ${REASONING_EFFORTS.join(', ')}.`
      return {
        content: info
          ? `${describe(info.id, info.contextWindow).slice(2)} is offered by ${args.provider}. ${efforts}`
          : `${args.model} is not in ${args.provider}'s list; the provider may still accept it. ${efforts}`,
      }
    },
  })
}
