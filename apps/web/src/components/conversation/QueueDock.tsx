import type { QueuedItem } from '../../model/session-controller.ts'
import styles from './QueueDock.module.css'

/** Follow-ups sent while a turn runs; each starts its own turn when the current one ends. */
export function QueueDock({ items }: { items: readonly QueuedItem[] }) {
  const queued = items.filter((item) => item.state === 'queued')
  if (queued.length === 0) return null
  return (
    <section className={styles.dock} aria-label="Queued messages">
      <h3 className={styles.title}>Queued, will run after the current turn</h3>
      <ol className={styles.list}>
        {queued.map((item) => (
          <li key={item.id} className={styles.item} data-testid="queued">
            {item.text}
            {item.images > 0 ? (
              <span className={styles.images}>
                {' '}
                (+{item.images} image{item.images > 1 ? 's' : ''})
              </span>
            ) : null}
          </li>
        ))}
      </ol>
    </section>
  )
}
