import { type Context, Service as CordisService, symbols } from 'cordis'

/**
 * cordis's `Service`, with calls into it made on the service itself. cordis
 * otherwise runs every method called through a context (`ctx.tools.register`)
 * on a fresh "shadow" whose `this.ctx` is the caller's context: two proxies and
 * a context object per call, also for each call a method makes on `this`. dsh's
 * services take the caller's context as an argument and keep their own as
 * `this.home`, so they never read that shadow; what `this.ctx` answers is
 * unchanged (the caller's context, through the service proxy).
 */
export class Service<C = unknown> extends CordisService<C> {
  constructor(ctx: Context, name: string) {
    super(ctx, name)
    const tracker = (this as unknown as Record<symbol, { noShadow?: boolean } | undefined>)[symbols.tracker]
    if (tracker) tracker.noShadow = true
  }
}
