import type { RewindResult, SessionId } from '@dsh/web-client'
import { useMemo, useState } from 'react'
import { useApp } from '../../hooks/app-context.ts'
import { useFirstPaint } from '../../hooks/useFirstPaint.ts'
import { MemoryContext } from '../../hooks/useRemembered.ts'
import { useSession } from '../../hooks/useSession.ts'
import type { ParsedCommand } from '../../lib/commands.ts'
import { navigate } from '../../lib/route.ts'
import { useStore } from '../../lib/store.ts'
import type { UserNode } from '../../model/nodes.ts'
import type { SessionController } from '../../model/session-controller.ts'
import { Composer } from '../composer/Composer.tsx'
import { MessageList } from '../conversation/MessageList.tsx'
import { type MessageActionHandlers, MessageActionsContext } from '../conversation/message-actions.ts'
import { QueueDock } from '../conversation/QueueDock.tsx'
import { TodoDock } from '../conversation/TodoDock.tsx'
import { PendingRequest } from '../dialogs/PendingRequest.tsx'
import { RewindDialog } from '../dialogs/RewindDialog.tsx'
import { SessionHeader } from './SessionHeader.tsx'
import styles from './SessionPage.module.css'

export function SessionPage({ sessionId }: { sessionId: SessionId }) {
  const controller = useSession(sessionId)
  // App renders this page keyed by session, so each session starts with an empty memory.
  const [memory] = useState(() => new Map<string, unknown>())
  if (!controller) return <div className={styles.page} aria-busy="true" />
  return (
    <MemoryContext.Provider value={memory}>
      <OpenSession controller={controller} />
    </MemoryContext.Provider>
  )
}

function OpenSession({ controller }: { controller: SessionController }) {
  const app = useApp()
  const view = useStore(controller)
  const { conversation, meta } = view
  const [rewinding, setRewinding] = useState<UserNode>()
  const actions = useMemo<MessageActionHandlers>(
    () => ({
      fork: (turn) => {
        app.api.fork(controller.id, turn).then(
          ({ sessionId }) => {
            void app.sessions.refresh()
            navigate({ page: 'session', sessionId })
          },
          (e: unknown) => app.toasts.error(e, 'Forking'),
        )
      },
      rewind: setRewinding,
    }),
    [app, controller],
  )
  const rewound = (result: RewindResult) => {
    setRewinding(undefined)
    void app.sessions.refresh()
    const files = result.restored ? `, ${result.changes.length} files restored` : ''
    app.toasts.show('info', `Rewound to before that message${files}`)
    if (result.sessionId) navigate({ page: 'session', sessionId: result.sessionId })
  }
  // The part of the log left out of the first screen is read once that screen is painted.
  useFirstPaint(view.status === 'ready', () => void controller.loadEarlier())

  const onCommand = async ({ name, arg }: ParsedCommand) => {
    if (name === 'new') {
      navigate({ page: 'home', ...(meta?.cwd ? { cwd: meta.cwd } : {}) })
    } else if (name === 'compact') {
      const result = await app.api.compact(controller.id)
      if (result.error) app.toasts.show('error', `Compaction failed: ${result.error}`)
      else
        app.toasts.show('info', result.compacted ? `Compacted ${result.replaced} messages` : 'Nothing to compact yet')
    } else if (name === 'model') {
      if (!arg) throw new Error('Name a model: /model <id>')
      await app.api.updateSession(controller.id, { model: arg })
      app.toasts.show('info', `Model set to ${arg}`)
    } else if (name === 'plan') {
      const on = planSwitch(arg, conversation.planMode)
      await controller.configure({ planMode: on })
      app.toasts.show('info', on ? 'Plan mode on' : 'Plan mode off')
    }
  }

  // Only a line of text until the log is in: the conversation is laid out once, when it arrives.
  if (view.status === 'loading') {
    return (
      <div className={styles.page} aria-busy="true">
        <p className={styles.opening}>Opening the session…</p>
      </div>
    )
  }

  if (view.status === 'missing' || view.status === 'error') {
    return (
      <div className={styles.page}>
        <div className={styles.problem} role="alert">
          <h2>{view.status === 'missing' ? 'This session does not exist' : 'The session could not be opened'}</h2>
          <p>{view.error}</p>
          <a href="#/">Start a new session</a>
        </div>
      </div>
    )
  }

  return (
    <div className={styles.page}>
      <SessionHeader view={view} controller={controller} />
      <MessageActionsContext.Provider value={actions}>
        <MessageList nodes={conversation.nodes} />
      </MessageActionsContext.Provider>
      <div className={styles.bottom}>
        <div className={styles.column}>
          <TodoDock todos={conversation.todos} />
          <QueueDock
            items={view.queued}
            onEdit={(id, text) => controller.editQueued(id, text)}
            onRemove={(id) => controller.removeQueued(id)}
          />
          <Composer
            cwd={meta?.cwd}
            running={conversation.running}
            onSend={(text, images) => controller.send(text, images)}
            onSteer={(text, images) => controller.steer(text, images)}
            onQueue={(text, images) => controller.enqueue(text, images)}
            onCommand={onCommand}
            onStop={() => controller.cancel().catch((e: unknown) => app.toasts.error(e, 'Stopping'))}
          />
        </div>
      </div>
      <PendingRequest sessionId={controller.id} />
      {rewinding ? (
        <RewindDialog
          sessionId={controller.id}
          node={rewinding}
          onDone={rewound}
          onCancel={() => setRewinding(undefined)}
        />
      ) : null}
    </div>
  )
}

/** `/plan` toggles plan mode; `/plan on` and `/plan off` set it. */
function planSwitch(arg: string, current: boolean): boolean {
  const word = arg.toLowerCase()
  if (!word) return !current
  if (word === 'on') return true
  if (word === 'off') return false
  throw new Error(`/plan takes on or off, not "${arg}"`)
}
