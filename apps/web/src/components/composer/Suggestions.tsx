import { clsx } from 'clsx'
import type { Suggestion } from './useSuggestions.ts'
import styles from './Suggestions.module.css'

export interface SuggestionsProps {
  id: string
  items: readonly Suggestion[]
  active: number
  label: string
  onPick: (item: Suggestion) => void
}

/** The popup above the composer for `/` commands, `/model` ids and `@` files; driven from the textarea's keys. */
export function Suggestions({ id, items, active, label, onPick }: SuggestionsProps) {
  return (
    <div id={id} role="listbox" aria-label={label} className={styles.list}>
      {items.map((item, i) => (
        // Focus stays in the textarea (aria-activedescendant names the active option); -1 keeps options out of Tab.
        <div
          key={item.value}
          id={`${id}-${i}`}
          role="option"
          tabIndex={-1}
          aria-selected={i === active}
          className={clsx(styles.item, i === active && styles.active)}
          onMouseDown={(e) => {
            e.preventDefault()
            onPick(item)
          }}
        >
          <span className={styles.label}>{item.label}</span>
          {item.detail ? <span className={styles.detail}>{item.detail}</span> : null}
        </div>
      ))}
    </div>
  )
}
