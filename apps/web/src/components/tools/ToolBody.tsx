import type { SessionId } from '@dsh/web-client'
import { diagnosticsOf, diagnosticsText } from '../../lib/diagnostics.ts'
import { hrefOf } from '../../lib/route.ts'
import { prettyArgs } from '../../lib/tool-args.ts'
import { toolDiff } from '../../lib/tool-diff.ts'
import type { ToolNode } from '../../model/nodes.ts'
import { Icon } from '../common/Icon.tsx'
import { DiffView } from './DiffView.tsx'
import { PlainOutput } from './PlainOutput.tsx'
import styles from './ToolBody.module.css'
import { TerminalView } from './TerminalView.tsx'

/** The inside of a tool card, by the view its tool declares: a diff, a terminal, else arguments and result. */
export function ToolBody({ node }: { node: ToolNode }) {
  const terminal = node.presentation?.view === 'terminal'
  const diff = toolDiff(node.presentation, node.result)
  const running = node.status === 'running' || node.status === 'pending' || node.status === 'streaming'
  const childSession = subagentOf(node)
  const diagnostics = diagnosticsOf(node.meta)
  const errors = diagnostics.filter((item) => item.severity === 'error').length
  return (
    <div className={styles.body}>
      {terminal ? (
        <TerminalView
          command={node.presentation?.command ?? ''}
          {...(node.result !== undefined ? { output: node.result } : {})}
          running={running}
        />
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
      {node.result !== undefined && !terminal && !(diff && node.status === 'done') ? (
        <PlainOutput label="Result" text={node.result || '(empty)'} error={node.status === 'error'} />
      ) : null}
      {diagnostics.length > 0 ? (
        <PlainOutput
          label={`Language server: ${diagnostics.length} problem${diagnostics.length === 1 ? '' : 's'}`}
          text={diagnosticsText(diagnostics)}
          error={errors > 0}
        />
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
