import type { SessionId } from '@dsh/web-client'
import { useLayoutEffect, useState } from 'react'
import { SessionController } from '../model/session-controller.ts'
import { useApp } from './app-context.ts'

/** The controller of the open session (undefined for the first render): loaded from the log, live while the page shows it. */
export function useSession(sessionId: SessionId): SessionController | undefined {
  const app = useApp()
  const [controller, setController] = useState<SessionController>()
  // A layout effect: a session already loaded is on screen in the first frame the page paints.
  useLayoutEffect(() => {
    const next = new SessionController(app.api, app.live, sessionId)
    next.onError = (error) => app.toasts.error(error, 'Sending a queued message')
    void next.load(app.takePrefetched(sessionId))
    setController(next)
    return () => {
      next.dispose()
      app.requests.clear()
    }
  }, [app, sessionId])
  return controller?.id === sessionId ? controller : undefined
}
