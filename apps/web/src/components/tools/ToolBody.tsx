import type { SessionId } from '@dsh/web-client'
import { hrefOf } from '../../lib/route.ts'
import { parseArgs, prettyArgs, stringArg } from '../../lib/tool-args.ts'
import { toolDiff } from '../../lib/tool-diff.ts'
import type { ToolNode } from '../../model/nodes.ts'
import { Icon } from '../common/Icon.tsx'
import { DiffView } from './DiffView.tsx'
import { PlainOutput } from './PlainOutput.tsx'
import styles from './ToolBody.module.css'
import { TerminalView } from './TerminalView.tsx'

/** The inside of a tool card: a diff for edits and writes, a terminal for bash, else arguments and result. */
export function ToolBody({ node }: { node: ToolNode }) {
  const args = parseArgs(node.args)
  const diff = toolDiff(node.name, node.args, node.result)
  const running = node.status === 'running' || node.status === 'pending' || node.status === 'streaming'
  const childSession = subagentOf(node)
  return (
    <div className={styles.body}>
      {node.name === 'bash' && args ? (
        <TerminalView command={stringArg(args, 'command') ?? ''} {...(node.result !== undefined ? { output: node.result } : {})} running={running} />
      ) : diff ? (
        <DiffView diff={diff} />
      ) : (
        <PlainOutput label="Arguments" text={prettyArgs(node.args)} />
      )}
      {childSession ? (
        <a className={styles.subagent} href={hrefOf({ page: 'session', sessionId: childSession })}>
          <Icon name="link" /> Open the subagent's session
        </a>
      ) : null}
      {node.error ? <PlainOutput label={`Error ${node.error.code}`} text={node.error.message} error /> : null}
      {node.result !== undefined && node.name !== 'bash' && !(diff && node.status === 'done') ? (
        <PlainOutput label="Result" text={node.result || '(empty)'} error={node.status === 'error'} />
      ) : null}
    </div>
  )
}

function subagentOf(node: ToolNode): SessionId | undefined {
  const meta = node.meta
  if (!meta || typeof meta !== 'object' || Array.isArray(meta)) return undefined
  const id = meta.sessionId
  return typeof id === 'string' ? (id as SessionId) : undefined
}
