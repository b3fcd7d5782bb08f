import { useRemembered } from '../../hooks/useRemembered.ts'
import type { ReasoningNode } from '../../model/nodes.ts'
import { Chevron } from '../common/Chevron.tsx'
import styles from './ReasoningRow.module.css'

/** The model's reasoning, collapsed to one line (the latest while it streams). */
export function ReasoningRow({ node }: { node: ReasoningNode }) {
  const [open, setOpen] = useRemembered(`reasoning:${node.key}`, false)
  const lastLine = node.streaming ? lastLineOf(node.text) : ''
  return (
    <div className={styles.row} data-node="reasoning">
      <button type="button" className={styles.toggle} aria-expanded={open} onClick={() => setOpen(!open)}>
        <Chevron open={open} />
        <span className={styles.label}>{node.streaming ? 'Thinking…' : 'Thought'}</span>
        {!open && lastLine ? <span className={styles.preview}>{lastLine}</span> : null}
      </button>
      {open ? <div className={styles.body}>{node.text}</div> : null}
    </div>
  )
}

function lastLineOf(text: string): string {
  const trimmed = text.trimEnd()
  return trimmed.slice(trimmed.lastIndexOf('\n') + 1)
}
