import { useState } from 'react'
import type { QueuedItem } from '../../model/session-controller.ts'
import { Button } from '../common/Button.tsx'
import styles from './QueueDock.module.css'

export interface QueueDockProps {
  items: readonly QueuedItem[]
  onEdit: (id: number, text: string) => void
  onRemove: (id: number) => void
}

/**
 * Follow-ups queued while a turn runs; each starts its own turn when the
 * ones before it have ended. The ones still held in this tab can be edited
 * or removed until then.
 */
export function QueueDock({ items, onEdit, onRemove }: QueueDockProps) {
  const [editing, setEditing] = useState<{ id: number; text: string }>()
  const queued = items.filter((item) => item.state !== 'sending')
  if (queued.length === 0) return null
  return (
    <section className={styles.dock} aria-label="Queued messages">
      <h3 className={styles.title}>Queued, will run after the current turn</h3>
      <ol className={styles.list}>
        {queued.map((item) => (
          <li key={item.id} className={styles.item} data-testid="queued" data-state={item.state}>
            {editing?.id === item.id ? (
              <form
                className={styles.edit}
                onSubmit={(event) => {
                  event.preventDefault()
                  if (editing.text.trim()) onEdit(item.id, editing.text.trim())
                  setEditing(undefined)
                }}
              >
                <textarea
                  className={styles.input}
                  aria-label="Queued message"
                  value={editing.text}
                  // biome-ignore lint/a11y/noAutofocus: the field opens on the user's Edit click
                  autoFocus
                  onChange={(event) => setEditing({ id: item.id, text: event.target.value })}
                  onKeyDown={(event) => {
                    if (event.key === 'Escape') setEditing(undefined)
                    else if (event.key === 'Enter' && !event.shiftKey) {
                      event.preventDefault()
                      event.currentTarget.form?.requestSubmit()
                    }
                  }}
                />
                <Button type="submit" size="sm" variant="primary">
                  Save
                </Button>
                <Button size="sm" variant="ghost" onClick={() => setEditing(undefined)}>
                  Cancel
                </Button>
              </form>
            ) : (
              <>
                <span className={styles.text}>{item.text}</span>
                {item.images > 0 ? (
                  <span className={styles.images}>
                    {' '}
                    (+{item.images} image{item.images > 1 ? 's' : ''})
                  </span>
                ) : null}
                {item.state === 'held' ? (
                  <span className={styles.actions}>
                    <Button
                      size="sm"
                      variant="ghost"
                      aria-label={`Edit queued message: ${item.text}`}
                      onClick={() => setEditing({ id: item.id, text: item.text })}
                    >
                      Edit
                    </Button>
                    <Button
                      size="sm"
                      variant="ghost"
                      aria-label={`Remove queued message: ${item.text}`}
                      onClick={() => onRemove(item.id)}
                    >
                      Remove
                    </Button>
                  </span>
                ) : null}
              </>
            )}
          </li>
        ))}
      </ol>
    </section>
  )
}
