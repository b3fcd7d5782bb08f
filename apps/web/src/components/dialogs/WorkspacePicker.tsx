import type { DirListing } from '@dsh/web-client'
import { useCallback, useEffect, useState } from 'react'
import { useApp } from '../../hooks/app-context.ts'
import { Button } from '../common/Button.tsx'
import { ErrorText } from '../common/ErrorText.tsx'
import { Icon } from '../common/Icon.tsx'
import { Dialog, DialogActions } from './Dialog.tsx'
import styles from './WorkspacePicker.module.css'

export interface WorkspacePickerProps {
  initial: string
  onPick: (path: string) => void
  onClose: () => void
}

/** Chooses the folder a new session runs in: a recent workspace, or any folder browsed to. */
export function WorkspacePicker({ initial, onPick, onClose }: WorkspacePickerProps) {
  const app = useApp()
  const [recent, setRecent] = useState<string[]>([])
  const [listing, setListing] = useState<DirListing>()
  const [typed, setTyped] = useState(initial)
  const [error, setError] = useState<string>()

  const browse = useCallback(
    async (path: string) => {
      setError(undefined)
      try {
        const next = await app.api.dirs(path)
        setListing(next)
        setTyped(next.path)
      } catch (e) {
        setError(e instanceof Error ? e.message : String(e))
      }
    },
    [app.api],
  )

  // On open: the folder to start from and the recent workspaces.
  useEffect(() => {
    void browse(initial)
    app.api.workspaces().then(
      ({ workspaces }) => setRecent(workspaces),
      () => setRecent([]),
    )
  }, [app.api, browse, initial])

  const join = (dir: string) => `${listing?.path.replace(/\/$/, '') ?? ''}/${dir}`

  return (
    <Dialog title="Choose a workspace" wide onEscape={onClose}>
      {recent.length > 0 ? (
        <section aria-label="Recent workspaces" className={styles.section}>
          <h3 className={styles.heading}>Recent</h3>
          <ul className={styles.list}>
            {recent.map((path) => (
              <li key={path}>
                <button type="button" className={styles.row} onClick={() => onPick(path)}>
                  <Icon name="folder" /> {path}
                </button>
              </li>
            ))}
          </ul>
        </section>
      ) : null}
      <section aria-label="Browse folders" className={styles.section}>
        <h3 className={styles.heading}>Browse</h3>
        <form
          className={styles.pathForm}
          onSubmit={(e) => {
            e.preventDefault()
            void browse(typed)
          }}
        >
          <input
            className={styles.path}
            aria-label="Folder path"
            value={typed}
            onChange={(e) => setTyped(e.target.value)}
            data-autofocus
          />
          <Button type="submit">Go</Button>
        </form>
        <ErrorText error={error} />
        <ul className={styles.list} aria-label="Folders">
          {listing?.parent ? (
            <li>
              <button type="button" className={styles.row} onClick={() => void browse(listing.parent as string)}>
                <Icon name="up" /> ..
              </button>
            </li>
          ) : null}
          {listing?.dirs.map((dir) => (
            <li key={dir}>
              <button type="button" className={styles.row} onClick={() => void browse(join(dir))}>
                <Icon name="folder" /> {dir}
              </button>
            </li>
          ))}
        </ul>
      </section>
      <DialogActions onCancel={onClose}>
        <Button
          className={styles.use}
          variant="primary"
          disabled={!listing}
          onClick={() => listing && onPick(listing.path)}
        >
          Use {listing?.path ?? 'this folder'}
        </Button>
      </DialogActions>
    </Dialog>
  )
}
