export * from './types.ts'
export { ApiError, type ApiOptions, DshApi, type SessionQuery } from './http.ts'
export { type ConnectionState, LiveConnection, type LiveOptions, type SessionHandlers } from './live.ts'
// What a tool result's meta holds for the language server's findings, as the server's tools read it.
export { diagnosticLine, resultDiagnostics } from '@dsh/wire-types'
