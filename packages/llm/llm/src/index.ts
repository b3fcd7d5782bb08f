export * from './types.ts'
export { BlockAssembler } from './assembler.ts'
export { LlmRuntime, failure } from './runtime.ts'
export { name, apply } from './plugin.ts'
