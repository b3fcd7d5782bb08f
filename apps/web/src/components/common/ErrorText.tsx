import styles from './ErrorText.module.css'

/** A failure next to the control that caused it, announced to screen readers; nothing when there is none. */
export function ErrorText({ error }: { error: string | undefined }) {
  return error ? (
    <p role="alert" className={styles.error}>
      {error}
    </p>
  ) : null
}
