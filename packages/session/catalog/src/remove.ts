import type { SessionId } from '@dsh/session'
import { type SessionPersistence, SessionNotFoundError } from '@dsh/session-persistence'
import type { CatalogStore } from './store.ts'

/**
 * Deletes a session's log and catalog entry, and those of its subagent
 * sessions (the catalog's children, theirs too), children first. A session
 * open in this process (`SessionInUseError`) or in another one
 * (`SessionBusyError`) stops it with what was deleted so far kept deleted.
 * Throws `SessionNotFoundError` when neither a log nor an entry exists.
 * Resolves with the ids deleted, the session's own last.
 */
export async function removeSessionTree(
  store: CatalogStore,
  persistence: SessionPersistence,
  id: string,
): Promise<string[]> {
  const removed: string[] = []
  for (const child of store.children(id)) removed.push(...(await removeSessionTree(store, persistence, child)))
  try {
    await persistence.remove(id as SessionId)
  } catch (error) {
    if (!(error instanceof SessionNotFoundError) || !store.remove(id)) throw error
    return [...removed, id]
  }
  store.remove(id)
  return [...removed, id]
}
