import styles from './TerminalView.module.css'

/** A shell command and its output, as a terminal shows them. */
export function TerminalView({ command, output, running }: { command: string; output?: string; running: boolean }) {
  return (
    <div className={styles.terminal} data-testid="terminal">
      <pre className={styles.pre}>
        <span className={styles.prompt} aria-hidden="true">
          ${' '}
        </span>
        <span className={styles.command}>{command}</span>
        {output !== undefined ? `\n${output}` : running ? '\n…' : ''}
      </pre>
    </div>
  )
}
