import { memo } from 'react'
import { assertNever } from '../../lib/never.ts'
import type { ConversationNode } from '../../model/nodes.ts'
import { ToolCard } from '../tools/ToolCard.tsx'
import { AssistantText } from './AssistantText.tsx'
import { ContextRow } from './ContextRow.tsx'
import { NoticeRow } from './NoticeRow.tsx'
import { ReasoningRow } from './ReasoningRow.tsx'
import { TurnFooter } from './TurnFooter.tsx'
import { UserBubble } from './UserBubble.tsx'

/** One conversation row; rows re-render only when their node object changes. */
export const NodeView = memo(function NodeView({ node }: { node: ConversationNode }) {
  switch (node.kind) {
    case 'user':
      return <UserBubble node={node} />
    case 'context':
      return <ContextRow node={node} />
    case 'text':
      return <AssistantText node={node} />
    case 'reasoning':
      return <ReasoningRow node={node} />
    case 'tool':
      return <ToolCard node={node} />
    case 'turn-end':
      return <TurnFooter node={node} />
    case 'notice':
      return <NoticeRow node={node} />
    default:
      return assertNever(node, 'conversation node')
  }
})
