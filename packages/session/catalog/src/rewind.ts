import { DshClient } from '@dsh/sdk-client'

export interface RewindRequest {
  sessionId: string
  to: string
  restoreFiles: boolean
  dryRun: boolean
  force: boolean
  home: string
  cwd: string
}

export interface RewindReport {
  sessionId?: string
  messageId: string
  turn: number
  checkpoint?: string
  changes: { path: string; change: 'modified' | 'added' | 'deleted' }[]
  conflicts: string[]
  restored: boolean
  backup?: string
}

/**
 * Rewinds through the SDK: a rewind forks and resumes sessions, which takes
 * the whole agent tree, so this starts this same dsh (`process.argv[1]`,
 * the bin) as `--profile sdk` with the same home and asks it.
 */
export async function rewindThroughSdk(request: RewindRequest): Promise<RewindReport> {
  let stderr = ''
  const client = await DshClient.spawn({
    command: process.execPath,
    args: [process.argv[1] as string, '--profile', 'sdk'],
    cwd: request.cwd,
    env: { ...process.env, DSH_HOME: request.home },
    onStderr: (text) => {
      stderr += text
    },
  })
  try {
    return await client.request('session/rewind', {
      sessionId: request.sessionId,
      to: request.to,
      ...(request.restoreFiles ? { restoreFiles: true } : {}),
      ...(request.dryRun ? { dryRun: true } : {}),
      ...(request.force ? { force: true } : {}),
    })
  } catch (error) {
    if (stderr.trim()) process.stderr.write(stderr)
    throw error
  } finally {
    await client.close()
  }
}

const VERB = {
  modified: 'modified',
  added: 'added (deleted by a restore)',
  deleted: 'deleted (recreated by a restore)',
}

/** The report as lines for a terminal. */
export function renderRewind(report: RewindReport, dryRun: boolean): string {
  const lines: string[] = []
  if (report.sessionId)
    lines.push(`forked before message ${report.messageId} (turn ${report.turn}): ${report.sessionId}`)
  else
    lines.push(`message ${report.messageId} starts turn ${report.turn}${dryRun ? ' (dry run: nothing changed)' : ''}`)
  if (!report.checkpoint) lines.push('no snapshot: dsh changed no files from this message on')
  else if (!report.changes.length) lines.push(`files: as in snapshot ${report.checkpoint.slice(0, 12)}`)
  else {
    lines.push(
      `files ${report.restored ? 'restored from' : 'differing from'} snapshot ${report.checkpoint.slice(0, 12)}:`,
    )
    for (const c of report.changes)
      lines.push(`  ${c.path}: ${VERB[c.change]}${report.conflicts.includes(c.path) ? ' [changed outside dsh]' : ''}`)
  }
  if (report.backup) lines.push(`the files as they were before the restore: snapshot ${report.backup}`)
  return `${lines.join('\n')}\n`
}
