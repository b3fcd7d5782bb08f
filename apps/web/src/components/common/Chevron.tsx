import { clsx } from 'clsx'
import styles from './Chevron.module.css'
import { Icon } from './Icon.tsx'

/** The disclosure arrow of a collapsible row: points right, turns down when open. */
export function Chevron({ open }: { open: boolean }) {
  return (
    <span className={clsx(styles.chevron, open && styles.open)}>
      <Icon name="chevron" size={14} />
    </span>
  )
}
