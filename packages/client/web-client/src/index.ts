export * from './types.ts'
export { ApiError, type ApiOptions, DshApi, type SessionQuery } from './http.ts'
export { type ConnectionState, LiveConnection, type LiveOptions, type SessionHandlers } from './live.ts'
