import { rm } from 'node:fs/promises'
import type { Context, Fiber, Plugin } from '@dsh/cordis'

/**
 * Mounts `plugin` on `ctx` with the config fields a test sets (the plugin's
 * `Config` schema fills in the rest) and resolves with its fiber once applied.
 */
export async function mountPlugin<C>(ctx: Context, plugin: Plugin<C>, config: Partial<C> = {}): Promise<Fiber> {
  return await ctx.plugin(plugin as Plugin, config)
}

/** Disposes a test's root context (every plugin on it stops), then removes the test's scratch folder. */
export async function disposeTestRoot(root: Context, scratch: string): Promise<void> {
  await root.fiber.dispose()
  await rm(scratch, { recursive: true, force: true })
}
