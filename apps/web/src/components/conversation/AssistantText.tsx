import { clsx } from 'clsx'
import type { TextNode } from '../../model/nodes.ts'
import styles from './AssistantText.module.css'
import { MessageActions } from './MessageActions.tsx'
import { Markdown } from './Markdown.tsx'

export function AssistantText({ node }: { node: TextNode }) {
  return (
    <div
      className={clsx(styles.text, node.streaming && styles.streaming)}
      data-node="assistant-text"
      aria-busy={node.streaming || undefined}
    >
      {node.partial ? (
        <span
          className={styles.partial}
          title="Joined while this reply was streaming; the full text appears when it ends"
        >
          …
        </span>
      ) : null}
      <Markdown text={node.text} />
      {node.streaming ? null : <MessageActions text={node.text} turn={node.turn} />}
    </div>
  )
}
