// In-process harness for the tool benchmarks: a cordis context with the real
// tools runtime, file and process seams, sandbox and tool plugins (built libs).
import { importLib } from './common.mjs'

export async function toolContext() {
  const { Context } = await importLib('packages/boot/cordis/lib/index.js')
  const plugins = await Promise.all(
    [
      'packages/core/tools/lib/index.js',
      'packages/fs/fs/lib/index.js',
      'packages/fs/spill/lib/index.js',
      'packages/subprocess/subprocess/lib/index.js',
      'packages/sandbox/sandbox/lib/index.js',
      'packages/shell/shell/lib/index.js',
      'packages/fs/tool-fs/lib/index.js',
      'packages/shell/tool-bash/lib/index.js',
    ].map((file) => importLib(file)),
  )
  const ctx = new Context()
  for (const plugin of plugins) await ctx.plugin(plugin, {})
  let n = 0
  const run = (cwd) => ({ signal: new AbortController().signal, cwd, sessionId: 'bench', sessionState: new Map() })
  return {
    ctx,
    /** Runs one tool call through the whole pipeline; throws on an error result. */
    async call(name, args, cwd) {
      const result = await ctx.tools.execute(
        { callId: `bench-${++n}`, name, arguments: JSON.stringify(args) },
        run(cwd),
      )
      if (result.isError) throw new Error(`${name} failed: ${JSON.stringify(result.content).slice(0, 300)}`)
      return result
    },
    dispose: () => ctx.fiber.dispose(),
  }
}
