export type { Branded, JsonValue } from '@dsh/wire-types'

/** Marks the end of a switch over a closed union; a new variant fails to compile here. */
export function assertNever(value: never, what = 'value'): never {
  throw new Error(`unexpected ${what}: ${JSON.stringify(value)}`)
}
