import { dataUrlOf } from '../../lib/images.ts'
import type { UserNode } from '../../model/nodes.ts'
import { MessageActions } from './MessageActions.tsx'
import { useMessageActions } from './message-actions.ts'
import styles from './UserBubble.module.css'

export function UserBubble({ node }: { node: UserNode }) {
  const actions = useMessageActions()
  return (
    <div className={styles.row} data-node="user">
      <div className={styles.bubble}>
        {node.images.length > 0 ? (
          <div className={styles.images}>
            {node.images.map((image, i) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: a sent message's images never change or move, and the same image may be attached twice
              <img key={i} className={styles.image} src={dataUrlOf(image)} alt={`Attachment ${i + 1}`} />
            ))}
          </div>
        ) : null}
        {node.text ? <div className={styles.text}>{node.text}</div> : null}
      </div>
      <MessageActions
        text={node.text}
        turn={node.turn}
        onRewind={actions ? () => actions.rewind(node) : undefined}
        align="end"
      />
    </div>
  )
}
