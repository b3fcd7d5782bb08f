import { type Context, type Fiber, Service } from '@dsh/cordis'
import { ConfigError } from './errors.ts'
import {
  checkChildren,
  checkUniqueIds,
  containsJs,
  isPlainObject,
  JsExpr,
  type Row,
  valuesEqual,
  walkRows,
} from './rows.ts'

declare module '@dsh/cordis' {
  interface Context {
    loader: Loader
  }
}

/** Turns a row's module name into something `import()` accepts (a file URL or a bare name). */
export type ModuleResolver = (name: string) => string | Promise<string>

/** Loads a row's module by name and resolves with its namespace. */
export type ModuleImporter = (name: string) => Promise<unknown>

export interface LoaderOptions {
  /** How rows' module names are loaded; `importModule` wins over `resolveModule` plus `import()`. */
  resolveModule?: ModuleResolver
  importModule?: ModuleImporter
  /** Extra names visible to `!!js` expressions, next to `ctx` and `process`. */
  scope?: Record<string, unknown>
}

interface Entry {
  row: Row
  parent: Entry | null
  children: Entry[]
  plugin: unknown
  /** The row's own fiber: a wrapper plugin's, or the plugin's when it is mounted directly (then `fiber === inner`). */
  fiber?: Fiber
  /** The plugin's fiber. */
  inner?: Fiber
  groupCtx?: Context
  error?: unknown
}

export interface RowProblem {
  id: string
  message: string
}

/** The tree after settling: rows whose plugin threw, and rows still waiting for services. */
export interface Health {
  failed: RowProblem[]
  pending: RowProblem[]
}

// cordis's FiberState is an ambient const enum, which isolated modules cannot read.
const State = { PENDING: 0, LOADING: 1, ACTIVE: 2, FAILED: 3 } as const
const stateOf = (fiber: Fiber | undefined): number | undefined => fiber?.state as number | undefined

type PluginLike = { Config?: { '~standard'?: { validate(value: unknown): unknown } } }

/**
 * Keeps a live plugin tree in step with a row list. `apply(rows)` diffs by id
 * (mount new rows, `update` changed ones, dispose removed ones) after loading
 * every module and checking every static config, so a bad row list changes
 * nothing. Applies run one at a time, in call order.
 */
export class Loader extends Service {
  private readonly home: Context
  private readonly options: LoaderOptions
  private readonly entries = new Map<string, Entry>()
  private queue: Promise<unknown> = Promise.resolve()
  /** Ids of the top-level rows, in the order of the last applied list. */
  private topLevel: string[] = []

  constructor(ctx: Context, options: LoaderOptions) {
    super(ctx, 'loader')
    this.home = ctx
    this.options = options
  }

  /** Reconciles the live tree with `rows`. Rejects with a ConfigError, leaving the tree as it was. */
  apply(rows: Row[]): Promise<void> {
    const run = this.queue.then(() => this.reconcile(rows))
    this.queue = run.then(
      () => {},
      () => {},
    )
    return run
  }

  /** The current row list as last applied. */
  rows(): Row[] {
    return this.topLevel.map((id) => this.snapshot(this.entries.get(id) as Entry))
  }

  /** The live fiber of a row's plugin, if it is mounted. */
  fiberOf(id: string): Fiber | undefined {
    return this.entries.get(id)?.inner
  }

  /** Waits until no row is loading (or `timeoutMs` passes) and reports failed and waiting rows. */
  async settle(timeoutMs = 10_000): Promise<Health> {
    await this.queue
    if (this.isLoading()) {
      // Checked after fiber state changes rather than polled, so the tree is seen settled at once. The check waits
      // for the microtasks a change sets off: cordis reports a fiber started before it hands its services on, and
      // the plugins waiting for them start loading only then.
      await new Promise<void>((resolve) => {
        let queued = false
        const done = () => {
          clearTimeout(timer)
          stop()
          resolve()
        }
        const check = () => {
          queued = false
          if (!this.isLoading()) done()
        }
        const timer = setTimeout(done, timeoutMs)
        const stop = this.home.on('internal/status', () => {
          if (queued) return
          queued = true
          setImmediate(check)
        })
      })
    }
    return this.health()
  }

  health(): Health {
    const failed: RowProblem[] = []
    const pending: RowProblem[] = []
    for (const [id, entry] of this.entries) {
      if (entry.error !== undefined) {
        failed.push({ id, message: errorText(entry.error) })
        continue
      }
      for (const fiber of [entry.fiber, entry.inner]) {
        if (!fiber || fiber.uid === null) continue
        const state = stateOf(fiber)
        if (state === State.FAILED) failed.push({ id, message: 'plugin failed to start' })
        else if (state === State.LOADING) pending.push({ id, message: 'still starting' })
        else if (state === State.PENDING) {
          const missing = Object.keys(fiber.inject ?? {}).filter((name) => this.home.get(name) === undefined)
          pending.push({
            id,
            message: `waiting for service${missing.length > 1 ? 's' : ''} ${missing.join(', ') || '(unknown)'}`,
          })
        } else continue
        break
      }
    }
    return { failed, pending }
  }

  private isLoading(): boolean {
    for (const entry of this.entries.values()) {
      if (stateOf(entry.fiber) === State.LOADING || stateOf(entry.inner) === State.LOADING) return true
    }
    return false
  }

  private snapshot(entry: Entry): Row {
    const row = { ...entry.row }
    if (row.group) row.config = entry.children.map((c) => this.snapshot(c))
    return row
  }

  private async reconcile(rows: Row[]): Promise<void> {
    const tree = checkChildren(rows, 'loader')
    checkUniqueIds(tree, 'loader')
    const desired = new Map<string, { row: Row; parent: string | null }>()
    for (const item of walkRows(tree)) desired.set(item.row.id, item)

    // Prepare: load every module and check every static config. Nothing is mutated yet.
    const plugins = new Map<string, unknown>()
    // Modules load concurrently (their file reads overlap); errors are reported in row order.
    const loading: [string, Row, Promise<unknown>][] = []
    for (const [id, { row }] of desired) {
      // A row switched off by a literal `disabled: true` is not loaded or checked until it is switched on.
      if (row.group || row.disabled === true) continue
      const current = this.entries.get(id)
      const load = current?.plugin && current.row.name === row.name ? Promise.resolve(current.plugin) : this.load(row)
      load.catch(() => {})
      loading.push([id, row, load])
    }
    for (const [id, row, load] of loading) {
      const plugin = await load
      if (!containsJs(row.config)) checkConfig(id, plugin, row.config)
      plugins.set(id, plugin)
    }

    // Dispose rows that are gone or whose identity (module, parent, group-ness, injections) changed.
    const keep = (entry: Entry): boolean => {
      const want = desired.get(entry.row.id)
      return (
        !!want &&
        want.parent === (entry.parent?.row.id ?? null) &&
        want.row.name === entry.row.name &&
        !!want.row.group === !!entry.row.group &&
        valuesEqual(want.row.inject, entry.row.inject)
      )
    }
    const doomed = [...this.entries.values()].filter((e) => !keep(e))
    await Promise.all(doomed.map((e) => e.fiber?.dispose()))
    for (const entry of doomed) this.forget(entry)

    // Create or update entries, in tree order so parents exist before children.
    const changed: Entry[] = []
    const created: Entry[] = []
    for (const [id, { row, parent }] of desired) {
      const existing = this.entries.get(id)
      if (existing) {
        if (plugins.has(id)) existing.plugin = plugins.get(id)
        const same =
          valuesEqual(existing.row.disabled, row.disabled) &&
          (row.group || valuesEqual(existing.row.config, row.config))
        existing.row = row
        existing.children = []
        if (!same) changed.push(existing)
      } else {
        const entry = this.createEntry(row, plugins.get(id))
        created.push(entry)
        this.entries.set(id, entry)
      }
      const entry = this.entries.get(id) as Entry
      entry.parent = parent === null ? null : (this.entries.get(parent) as Entry)
      entry.parent?.children.push(entry)
    }
    this.topLevel = tree.map((row) => row.id)
    for (const entry of created) {
      if (!entry.parent) this.mount(entry, this.home)
      else if (entry.parent.groupCtx) this.mount(entry, entry.parent.groupCtx)
    }
    await Promise.all(changed.map((entry) => this.refresh(entry)))
  }

  /** Brings a mounted row in line with its changed `disabled` or `config`. */
  private async refresh(entry: Entry): Promise<void> {
    const { fiber } = entry
    if (fiber && fiber !== entry.inner) return fiber.update(entry.row)
    if (!fiber || fiber.uid === null) {
      const parent = entry.parent ? entry.parent.groupCtx : this.home
      if (parent) this.mount(entry, parent)
      return
    }
    let config: unknown
    try {
      config = this.resolve(entry, fiber.parent)
    } catch (error) {
      fiber.parent.logger(entry.row.id).error(error)
      entry.fiber = entry.inner = undefined
      await fiber.dispose()
      throw error
    }
    if (config === DISABLED) {
      entry.fiber = entry.inner = undefined
      return fiber.dispose()
    }
    entry.error = undefined
    await fiber.update(config)?.catch((error: unknown) => {
      if (entry.inner === fiber) entry.error = error
    })
  }

  private forget(entry: Entry): void {
    for (const child of entry.children) this.forget(child)
    if (this.entries.get(entry.row.id) === entry) this.entries.delete(entry.row.id)
  }

  private async load(row: Row): Promise<unknown> {
    const name = row.name as string
    let mod: Record<string, unknown>
    try {
      mod = (await this.importModule(name)) as Record<string, unknown>
    } catch (error) {
      throw new ConfigError(`row "${row.id}": cannot load module "${name}": ${errorText(error)}`)
    }
    const plugin = mod.default ?? mod
    const usable =
      typeof plugin === 'function' ||
      (isPlainObject(plugin) || Object.getPrototypeOf(plugin) === null
        ? typeof (plugin as { apply?: unknown }).apply === 'function'
        : false)
    if (!usable) {
      throw new ConfigError(
        `row "${row.id}": module "${name}" is not a plugin (export a function, a class or an object with apply)`,
      )
    }
    return plugin
  }

  private async importModule(name: string): Promise<unknown> {
    const { importModule, resolveModule } = this.options
    if (importModule) return importModule(name)
    if (!resolveModule) throw new Error('the loader has neither importModule nor resolveModule')
    return import(await resolveModule(name))
  }

  private createEntry(row: Row, plugin: unknown): Entry {
    return { row, parent: null, children: [], plugin }
  }

  private mount(entry: Entry, parent: Context): void {
    if (entry.fiber && entry.fiber.uid !== null) return
    if (needsWrapper(entry)) {
      entry.fiber = parent.plugin(this.wrapper(entry) as never, entry.row as never)
      return
    }
    entry.fiber = entry.inner = undefined
    let config: unknown
    try {
      config = this.resolve(entry, parent)
    } catch (error) {
      parent.logger(entry.row.id).error(error)
      return
    }
    if (config === DISABLED) return
    entry.fiber = this.start(entry, parent, config)
  }

  /**
   * A row with `inject` evaluates its `!!js` once those services exist, and a
   * group holds its children: both get a wrapper plugin, mounted with the row
   * as its config, whose context is the one expressions and children see.
   * The plugin itself is mounted inside it.
   */
  private wrapper(entry: Entry): object {
    return {
      name: entry.row.id,
      inject: entry.row.inject ?? [],
      apply: (ctx: Context) => {
        entry.inner = undefined
        if (entry.row.group) {
          if (this.resolveDisabled(entry, ctx)) return
          entry.groupCtx = ctx
          ctx.effect(
            () => () => {
              entry.groupCtx = undefined
              for (const child of entry.children) child.fiber = child.inner = undefined
            },
            'group children',
          )
          for (const child of entry.children) this.mount(child, ctx)
          return
        }
        const config = this.resolve(entry, ctx)
        if (config !== DISABLED) this.start(entry, ctx, config)
      },
    }
  }

  /** The row's evaluated config, checked when it holds `!!js`, or DISABLED. Records and rethrows a failure. */
  private resolve(entry: Entry, ctx: Context): unknown {
    if (this.resolveDisabled(entry, ctx)) return DISABLED
    return this.recordFailure(entry, () => {
      const config = this.evaluate(entry.row.config, ctx, entry.row.id)
      if (containsJs(entry.row.config)) checkConfig(entry.row.id, entry.plugin, config)
      return config
    })
  }

  private resolveDisabled(entry: Entry, ctx: Context): boolean {
    entry.error = undefined
    return this.recordFailure(entry, () => !!this.evaluate(entry.row.disabled, ctx, entry.row.id))
  }

  private recordFailure<T>(entry: Entry, run: () => T): T {
    try {
      return run()
    } catch (error) {
      entry.error = error
      throw error
    }
  }

  private start(entry: Entry, ctx: Context, config: unknown): Fiber {
    const inner = ctx.plugin(entry.plugin as never, config as never)
    entry.inner = inner
    inner.then(null, (error: unknown) => {
      if (entry.inner === inner) entry.error = error
    })
    return inner
  }

  private evaluate(value: unknown, ctx: Context, id: string): unknown {
    if (value instanceof JsExpr) {
      const scope = { process, ...this.options.scope }
      try {
        const fn = new Function('ctx', ...Object.keys(scope), `"use strict"; return (${value.source})`)
        return fn(ctx, ...Object.values(scope))
      } catch (error) {
        throw new ConfigError(`row "${id}": !!js ${value.source} failed: ${errorText(error)}`)
      }
    }
    if (Array.isArray(value)) return value.map((v) => this.evaluate(v, ctx, id))
    if (isPlainObject(value)) {
      const out: Record<string, unknown> = {}
      for (const [k, v] of Object.entries(value)) out[k] = this.evaluate(v, ctx, id)
      return out
    }
    return value
  }
}

const DISABLED = Symbol('disabled')

/**
 * Most rows mount their plugin straight under the parent context. Rows with
 * `inject` and groups need a wrapper fiber (see `Loader.wrapper`); so do
 * plugins without a name of their own, whose logs a wrapper names after the row.
 */
function needsWrapper(entry: Entry): boolean {
  const { row, plugin } = entry
  if (row.group || (row.inject?.length ?? 0) > 0) return true
  if (plugin === undefined) return false
  const name = (plugin as { name?: unknown }).name
  return typeof name !== 'string' || name === '' || name === 'apply'
}

function checkConfig(id: string, plugin: unknown, config: unknown): void {
  const schema = (plugin as PluginLike).Config?.['~standard']
  if (!schema) return
  const result = schema.validate(config) as { issues?: { message: string; path?: readonly unknown[] }[] }
  if (result instanceof Promise) throw new ConfigError(`row "${id}": the plugin's config schema is asynchronous`)
  if (!result.issues?.length) return
  const lines = result.issues.map((issue) => {
    const at = issue.path
      ?.map((p) => (typeof p === 'object' && p !== null && 'key' in p ? (p as { key: unknown }).key : p))
      .join('.')
    return at ? `${at}: ${issue.message}` : issue.message
  })
  throw new ConfigError(`row "${id}": invalid config: ${lines.join('; ')}`)
}

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
