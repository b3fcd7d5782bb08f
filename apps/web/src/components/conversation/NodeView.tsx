import { type ComponentType, memo } from 'react'
import type { ConversationNode } from '../../model/nodes.ts'
import { ToolCard } from '../tools/ToolCard.tsx'
import { AssistantText } from './AssistantText.tsx'
import { ContextRow } from './ContextRow.tsx'
import { NoticeRow } from './NoticeRow.tsx'
import { ReasoningRow } from './ReasoningRow.tsx'
import { TurnFooter } from './TurnFooter.tsx'
import { UserBubble } from './UserBubble.tsx'

type NodeOf<K extends ConversationNode['kind']> = Extract<ConversationNode, { kind: K }>

/** The row component of each kind of node; the mapped type makes a new kind a compile error until it has one. */
const VIEWS: { [K in ConversationNode['kind']]: ComponentType<{ node: NodeOf<K> }> } = {
  user: UserBubble,
  context: ContextRow,
  text: AssistantText,
  reasoning: ReasoningRow,
  tool: ToolCard,
  'turn-end': TurnFooter,
  notice: NoticeRow,
}

/** One conversation row; rows re-render only when their node object changes. */
export const NodeView = memo(function NodeView({ node }: { node: ConversationNode }) {
  // The map pairs each kind with its component, which TypeScript cannot follow through an index.
  const View = VIEWS[node.kind] as ComponentType<{ node: ConversationNode }>
  return <View node={node} />
})
