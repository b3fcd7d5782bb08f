declare const brand: unique symbol

/** An opaque id: a string that only the code minting it can produce (by a cast). */
export type Branded<T, B extends string> = T & { readonly [brand]: B }

/** Marks the end of a switch over a closed union; a new variant fails to compile here. */
export function assertNever(value: never, what = 'value'): never {
  throw new Error(`unexpected ${what}: ${JSON.stringify(value)}`)
}

/** A value that survives JSON.stringify and JSON.parse unchanged. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue }
