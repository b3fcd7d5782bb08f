import type { Context } from '@dsh/cordis'
import { type ToolDefinition, ToolRuntime, type ToolsConfig } from '../src/index.ts'

/** Mounts the tool runtime on `root` with `config`; resolves with it. */
export async function bootTools(root: Context, config: Partial<ToolsConfig> = {}): Promise<ToolRuntime> {
  await root.plugin(ToolRuntime, config as ToolsConfig)
  return root.tools
}

/** Mounts a plugin called `name` that registers `definitions`; resolves with its fiber. */
export async function mountTools(root: Context, name: string, ...definitions: ToolDefinition[]) {
  const fiber = root.plugin({
    name,
    inject: ['tools'],
    apply(ctx: Context) {
      for (const definition of definitions) ctx.tools.register(ctx, definition)
    },
  })
  await fiber
  return fiber
}
