import { type KeyboardEvent, useEffect, useId, useRef, useState } from 'react'
import { Icon, type IconName } from '../common/Icon.tsx'
import styles from './SessionMenu.module.css'

interface Action {
  label: string
  icon: IconName
  run: () => void
}

/** The ⋯ menu of a session: arrow keys move, Enter picks, Escape closes. */
export function SessionMenu({
  title,
  onRename,
  onFork,
  onDelete,
}: {
  title: string
  onRename: () => void
  onFork: () => void
  onDelete: () => void
}) {
  const [open, setOpen] = useState(false)
  const button = useRef<HTMLButtonElement>(null)
  const menu = useRef<HTMLDivElement>(null)
  const id = useId()
  const actions: Action[] = [
    { label: 'Rename', icon: 'edit', run: onRename },
    { label: 'Fork', icon: 'fork', run: onFork },
    { label: 'Delete', icon: 'trash', run: onDelete },
  ]

  useEffect(() => {
    if (!open) return
    menu.current?.querySelector<HTMLElement>('[role="menuitem"]')?.focus()
    const close = (event: MouseEvent) => {
      if (!menu.current?.contains(event.target as Node) && event.target !== button.current) setOpen(false)
    }
    document.addEventListener('mousedown', close)
    return () => document.removeEventListener('mousedown', close)
  }, [open])

  const onKeyDown = (event: KeyboardEvent<HTMLDivElement>) => {
    const items = [...(menu.current?.querySelectorAll<HTMLElement>('[role="menuitem"]') ?? [])]
    const index = items.indexOf(document.activeElement as HTMLElement)
    if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
      event.preventDefault()
      items[(index + (event.key === 'ArrowDown' ? 1 : -1) + items.length) % items.length]?.focus()
    } else if (event.key === 'Escape' || event.key === 'Tab') {
      setOpen(false)
      if (event.key === 'Escape') button.current?.focus()
    }
  }

  return (
    <div className={styles.wrap}>
      <button
        ref={button}
        type="button"
        className={styles.button}
        aria-label={`Actions for ${title}`}
        aria-haspopup="menu"
        aria-expanded={open}
        aria-controls={open ? id : undefined}
        onClick={() => setOpen(!open)}
      >
        <Icon name="more" />
      </button>
      {open ? (
        <div ref={menu} id={id} role="menu" className={styles.menu} onKeyDown={onKeyDown}>
          {actions.map((action) => (
            <div key={action.label} role="none">
              <button
                type="button"
                role="menuitem"
                className={styles.item}
                onClick={() => {
                  setOpen(false)
                  action.run()
                }}
              >
                <Icon name={action.icon} size={14} /> {action.label}
              </button>
            </div>
          ))}
        </div>
      ) : null}
    </div>
  )
}
