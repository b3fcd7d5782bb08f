import { useEffect, useState } from 'react'
import type { CommandInfo } from '@dsh/web-client'
import { useApp } from '../../hooks/app-context.ts'
import { COMMANDS } from '../../lib/commands.ts'
import { useStore } from '../../lib/store.ts'
import type { Trigger } from '../../lib/triggers.ts'

export interface Suggestion {
  value: string
  label: string
  detail?: string
}

const FILE_DELAY_MS = 120
const FILE_LIMIT = 20

/** What to offer for a trigger: commands, models, or workspace files (fetched as the query changes). */
export function useSuggestions(trigger: Trigger | undefined, cwd: string | undefined): Suggestion[] {
  const app = useApp()
  const info = useStore(app.info)
  const [files, setFiles] = useState<{ query: string; list: string[] }>({ query: '', list: [] })
  const mentionQuery = trigger?.kind === 'mention' ? trigger.query : undefined
  const [workspaceCommands, setWorkspaceCommands] = useState<{ cwd: string | undefined; list: CommandInfo[] }>()
  const wantsCommands = trigger?.kind === 'command'

  // The workspace's own commands (prompt files, skills), fetched once per folder when `/` is typed.
  useEffect(() => {
    if (!wantsCommands || (workspaceCommands && workspaceCommands.cwd === cwd)) return
    let live = true
    app.api.commands(cwd).then(
      ({ commands }) => live && setWorkspaceCommands({ cwd, list: commands }),
      () => live && setWorkspaceCommands({ cwd, list: [] }),
    )
    return () => {
      live = false
    }
  }, [app, cwd, wantsCommands, workspaceCommands])

  useEffect(() => {
    if (mentionQuery === undefined) return
    let live = true
    const timer = setTimeout(() => {
      app.api.files({ ...(cwd ? { cwd } : {}), query: mentionQuery, limit: FILE_LIMIT }).then(
        ({ files: list }) => live && setFiles({ query: mentionQuery, list }),
        () => live && setFiles({ query: mentionQuery, list: [] }),
      )
    }, FILE_DELAY_MS)
    return () => {
      live = false
      clearTimeout(timer)
    }
  }, [app, cwd, mentionQuery])

  if (!trigger) return []
  const query = trigger.query.toLowerCase()
  switch (trigger.kind) {
    case 'command': {
      const builtIn = COMMANDS.filter((c) => c.name.startsWith(query)).map((c) => ({
        value: c.name,
        label: `/${c.name}${c.args ? ` ${c.args}` : ''}`,
        detail: c.description,
      }))
      const own = (workspaceCommands && workspaceCommands.cwd === cwd ? workspaceCommands.list : [])
        .filter((c) => c.name.toLowerCase().startsWith(query) && !COMMANDS.some((b) => b.name === c.name))
        .map((c) => ({
          value: c.name,
          label: `/${c.name}${c.argumentHint ? ` ${c.argumentHint}` : ''}`,
          detail: `${c.description} (${c.scope})`,
        }))
      return [...builtIn, ...own]
    }
    case 'model':
      return (info?.models ?? [])
        .filter((m) => m.toLowerCase().includes(query))
        .map((m) => ({ value: m, label: m, ...(m === info?.defaultModel ? { detail: 'default' } : {}) }))
    case 'mention':
      return files.list.map((path) => ({ value: path, label: path }))
  }
}
