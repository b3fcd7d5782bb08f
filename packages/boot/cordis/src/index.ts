// The one place dsh imports cordis and schemastery from. A swap to a patched
// copy of either touches this package only.
export * from 'cordis'
export { Service } from './service.ts'
export { default as Schema } from 'schemastery'
export { stringList, stringValue } from './schema.ts'
export { ScopedRegistry } from './registry.ts'
export { ExclusiveSlot } from './slot.ts'
export { type NamedProviderService, ProviderService, providerService, sharedMap } from './provider.ts'
export { type Branded, assertNever, type JsonValue } from './types.ts'
export { emitIsolated } from './dispatch.ts'
