// Runs at snapshot build time only, once every in-box module is evaluated.
// It reads the plugin exports of every module and takes a small plugin tree
// through the code paths every start takes (the loader mounting rows, cordis
// fibers, services, effects and events, schemastery config checks, zod's
// JSON Schema conversion of tool parameters, the tool pipeline), then
// disposes it. V8 compiles a function the first time it runs and the
// snapshot keeps that bytecode, so a start from the snapshot does not
// compile these functions again. Nothing the tree makes outlives it.

/** What the loader and cordis read of a row's module: each export is a getter of its own in the bundle. */
const PLUGIN_EXPORTS = ['default', 'name', 'inject', 'Config', 'apply']

/** The modules the throwaway tree needs. */
const TREE_MODULES = ['@dsh/cordis', '@dsh/loader', '@dsh/tools', 'zod']

/**
 * `load(specifier)` resolves with an in-box module's namespace; `specifiers`
 * are the modules evaluated at build time.
 */
export async function warmUp(load, specifiers) {
  for (const specifier of specifiers) {
    const namespace = await load(specifier)
    for (const key of PLUGIN_EXPORTS) {
      try {
        void namespace[key]
      } catch {
        // an export that cannot be read at build time is read at run time
      }
    }
  }

  // A module deferred to run time must not be evaluated here.
  if (!TREE_MODULES.every((specifier) => specifiers.includes(specifier))) return
  const cordis = await load('@dsh/cordis')
  const { Loader, applyPatches, parsePatchList } = await load('@dsh/loader')
  const tools = await load('@dsh/tools')
  const { z } = await load('zod')
  const { Context, Schema, Service } = cordis

  class Counter extends Service {
    static Config = Schema.object({
      start: Schema.natural().default(0).description('first value'),
      step: Schema.number().min(1).default(1),
      label: Schema.string().default('counter'),
      tags: Schema.array(String).default([]),
      mode: Schema.union(['fast', 'slow']).default('fast'),
    })
    constructor(ctx, config) {
      super(ctx, 'warmCounter')
      this.step = config.step
      this.value = config.start
    }
    next() {
      this.value += this.step
      this.ctx.emit('warm/counted', this.value)
      return this.value
    }
  }

  const provider = {
    name: 'warm-provider',
    Config: Counter.Config,
    apply(ctx, config) {
      ctx.plugin(Counter, config)
    },
  }
  const consumer = {
    name: 'warm-consumer',
    inject: ['warmCounter', 'tools'],
    Config: Schema.object({ greeting: Schema.string().default('hi') }),
    apply(ctx, config) {
      new cordis.ScopedRegistry('warm entry').register(ctx, config.greeting, 1)
      ctx.on('warm/counted', () => {})
      ctx.effect(() => () => {}, 'warm effect')
      ctx.warmCounter.next()
      ctx.tools.register(
        ctx,
        tools.defineTool({
          name: `warm_${config.greeting}`,
          description: 'Exercises the tool pipeline.',
          parameters: z.object({
            path: z.string().min(1).max(100).describe('A path.'),
            offset: z.number().int().min(1).optional().describe('A line.'),
            all: z.boolean().default(false),
            mode: z.enum(['a', 'b']).optional(),
            items: z
              .array(z.object({ text: z.string(), done: z.boolean().optional() }))
              .max(10)
              .optional(),
            extra: z.union([z.string(), z.number()]).nullable().optional(),
            meta: z.record(z.string(), z.string()).optional(),
          }),
          readOnly: true,
          isConcurrencySafe: () => true,
          access: (args) => ({ kind: 'read', paths: [args.path], summary: `warm ${args.path}` }),
          execute: async (args) => ({ content: `read ${args.path}` }),
        }),
      )
    },
  }
  const modules = { 'warm-provider': provider, 'warm-consumer': consumer, '@dsh/tools': tools }

  // A new profile's own patch file: comment lines and an empty flow list.
  parsePatchList('# Your patch layer for this profile.\n#   - id: <row id>\n[]\n', 'warm-up', process.cwd())

  const root = new Context()
  root.provide('warmStartup', { step: 2 })
  await root.plugin(Loader, { importModule: async (name) => modules[name], scope: { double: (n) => n * 2 } })
  // Rows with and without inject and !!js, a group, a disabled row; then an update of each kind.
  const rows = (step) =>
    applyPatches([
      parsePatchList(
        `- insert:
    - { id: tools, name: '@dsh/tools' }
    - { id: counter, name: warm-provider, inject: [warmStartup], config: { step: !!js ctx.warmStartup.step, label: !!js "'n' + double(${step})" } }
    - { id: plain, name: warm-consumer, config: { greeting: !!js "'p' + double(${step})" } }
    - id: group
      group: true
      config:
        - { id: consumer, name: warm-consumer, config: { greeting: hello${step} } }
        - { id: other, name: warm-consumer, disabled: true }
`,
        'warm-up',
        process.cwd(),
      ),
    ]).rows
  for (const step of [1, 2]) {
    await root.loader.apply(rows(step))
    const health = await root.loader.settle()
    const problems = [...health.failed, ...health.pending]
    if (problems.length) throw new Error(`warm-up rows did not start: ${JSON.stringify(problems)}`)
  }
  const runtime = root.get('tools')
  if (runtime.schemas().length !== 2) throw new Error('warm-up tools are missing')
  const result = await runtime.execute(
    { callId: 'warm-1', name: 'warm_hello2', arguments: '{"path":"a.txt","items":[{"text":"x"}]}' },
    { signal: new AbortController().signal, cwd: process.cwd(), sessionId: 'warm', sessionState: new Map() },
  )
  if (result.isError) throw new Error(`the warm-up tool call failed: ${JSON.stringify(result.content)}`)
  await cordis.emitIsolated(root, 'warm/done')
  await root.fiber.dispose()
}
