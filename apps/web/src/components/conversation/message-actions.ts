import { createContext, useContext } from 'react'
import type { UserNode } from '../../model/nodes.ts'

/** What the open session lets a message do; the rows read it from context (they are memoised per node). */
export interface MessageActionHandlers {
  /** Opens a new session holding the conversation up to the end of `turn`. */
  fork(turn: number): void
  /** Starts a rewind to before this prompt (shows what would change first). */
  rewind(node: UserNode): void
}

export const MessageActionsContext = createContext<MessageActionHandlers | undefined>(undefined)

export function useMessageActions(): MessageActionHandlers | undefined {
  return useContext(MessageActionsContext)
}
