import { afterEach, beforeEach } from 'vitest'
import { Context } from '../src/index.ts'

/** A fresh root context for each test of the calling file (`t.root`), disposed after the test. */
export function rootPerTest(): { readonly root: Context } {
  let current: Context | undefined
  beforeEach(() => {
    current = new Context()
  })
  afterEach(async () => {
    await current?.fiber.dispose()
    current = undefined
  })
  return {
    get root() {
      if (!current) throw new Error('t.root is only there inside a test')
      return current
    },
  }
}

/** Mounts a plugin that injects `service` and runs `apply` with its context; resolves once it ran. */
export async function withService(root: Context, service: string, apply: (ctx: Context) => void): Promise<void> {
  await root.plugin({ name: `uses-${service}`, inject: [service], apply })
}
