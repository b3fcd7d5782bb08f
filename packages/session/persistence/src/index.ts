export {
  type ListOptions,
  type LogProblem,
  type OpenedLog,
  SessionBusyError,
  type SessionHolder,
  SessionInUseError,
  SessionLogError,
  SessionLogVersionError,
  SessionNotFoundError,
  SessionPersistence,
  type StoredSession,
} from './seam.ts'
// The module is the writer plugin: `name`, `inject`, `Config`, `apply`.
export { apply, Config, inject, name, type SessionWriterConfig } from './writer.ts'
