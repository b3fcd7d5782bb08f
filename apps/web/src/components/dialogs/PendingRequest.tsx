import type { SessionId } from '@dsh/web-client'
import { lazy, Suspense } from 'react'
import { useApp } from '../../hooks/app-context.ts'
import { useStore } from '../../lib/store.ts'

// Off the first paint: loaded when the first request comes.
const ApprovalDialog = lazy(() => import('./ApprovalDialog.tsx').then((m) => ({ default: m.ApprovalDialog })))
const QuestionDialog = lazy(() => import('./QuestionDialog.tsx').then((m) => ({ default: m.QuestionDialog })))

/**
 * The oldest approval or question of the open session as a dialog (the next
 * follows when it is answered); then those of its subagents, which the server
 * sends to subscribers of their ancestors.
 */
export function PendingRequest({ sessionId }: { sessionId: SessionId }) {
  const app = useApp()
  const pending = useStore(app.requests)
  const request = pending.find((r) => r.sessionId === sessionId) ?? pending[0]
  if (!request) return null
  return (
    <Suspense fallback={null}>
      {request.type === 'approval' ? (
        <ApprovalDialog
          key={request.requestId}
          request={request}
          onAnswer={(decision, message) => app.requests.approve(request.requestId, decision, message)}
        />
      ) : (
        <QuestionDialog
          key={request.requestId}
          request={request}
          onAnswer={(answers) => app.requests.answer(request.requestId, answers)}
        />
      )}
    </Suspense>
  )
}
