import { useState } from 'react'
import { useApp } from '../../hooks/app-context.ts'
import type { ParsedCommand } from '../../lib/commands.ts'
import { baseName } from '../../lib/format.ts'
import type { PendingImage } from '../../lib/images.ts'
import { navigate } from '../../lib/route.ts'
import { useStore } from '../../lib/store.ts'
import { Icon } from '../common/Icon.tsx'
import { SidebarToggle } from '../common/SidebarToggle.tsx'
import { Composer } from '../composer/Composer.tsx'
import { WorkspacePicker } from '../dialogs/WorkspacePicker.tsx'
import styles from './HomePage.module.css'

/** A new session: pick its workspace, write the first message; the session is created when it is sent. */
export function HomePage({ cwd: routeCwd }: { cwd?: string }) {
  const app = useApp()
  const info = useStore(app.info)
  const settings = useStore(app.settings)
  const [chosen, setChosen] = useState<string>()
  const [model, setModel] = useState<string>()
  const [picking, setPicking] = useState(false)
  const cwd = chosen ?? routeCwd ?? info?.launchCwd

  const onSend = async (text: string, images: PendingImage[]) => {
    const { sessionId } = await app.api.createSession({ ...(cwd ? { cwd } : {}), ...(model ? { model } : {}) })
    await app.api.sendMessage(
      sessionId,
      images.length ? { text, images: images.map(({ mediaType, data }) => ({ mediaType, data })) } : { text },
    )
    void app.sessions.refresh()
    navigate({ page: 'session', sessionId })
  }

  const onCommand = async ({ name, arg }: ParsedCommand) => {
    if (name === 'model') {
      if (!arg) throw new Error('Name a model: /model <id>')
      setModel(arg)
      app.toasts.show('info', `The new session will use ${arg}`)
    } else if (name === 'compact') {
      throw new Error('Nothing to compact: this session has not started yet')
    }
  }

  return (
    <div className={styles.page}>
      <header className={styles.header}>
        <SidebarToggle />
      </header>
      <div className={styles.center}>
        <h1 className={styles.title}>What should dsh do?</h1>
        {settings && !settings.hasKey ? (
          <p className={styles.notice} role="note">
            No model key is set yet. <a href="#/settings">Add one in Settings</a> before the first message.
          </p>
        ) : null}
        <Composer
          cwd={cwd}
          onSend={onSend}
          onCommand={onCommand}
          disabled={!cwd}
          toolbar={
            <>
              <button
                type="button"
                className={styles.workspace}
                onClick={() => setPicking(true)}
                title={cwd}
                aria-label={`Workspace: ${cwd ?? 'none'}. Change`}
              >
                <Icon name="folder" size={14} /> {cwd ? baseName(cwd) : 'Choose a workspace'}
              </button>
              {model ? <span className={styles.model}>{model}</span> : null}
            </>
          }
        />
      </div>
      {picking && cwd !== undefined ? (
        <WorkspacePicker
          initial={cwd}
          onClose={() => setPicking(false)}
          onPick={(path) => {
            setChosen(path)
            setPicking(false)
          }}
        />
      ) : null}
    </div>
  )
}
