declare const brand: unique symbol

/** An opaque id: a string that only the code minting it can produce (by a cast). On the wire it is a plain string. */
export type Branded<T, B extends string> = T & { readonly [brand]: B }

/** A value that survives JSON.stringify and JSON.parse unchanged. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue }
