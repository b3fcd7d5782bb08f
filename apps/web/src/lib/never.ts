/** The end of a switch over a closed union: a compile error when a case is missing, a throw if one arrives anyway. */
export function assertNever(value: never, what = 'value'): never {
  throw new Error(`unknown ${what}: ${JSON.stringify(value)}`)
}
