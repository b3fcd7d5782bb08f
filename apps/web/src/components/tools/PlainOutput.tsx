import { clsx } from 'clsx'
import styles from './PlainOutput.module.css'

/** Tool arguments or output as preformatted text. */
export function PlainOutput({ label, text, error }: { label: string; text: string; error?: boolean }) {
  return (
    <section className={styles.section} aria-label={label}>
      <h4 className={styles.label}>{label}</h4>
      <pre className={clsx(styles.pre, error && styles.error)}>{text}</pre>
    </section>
  )
}
