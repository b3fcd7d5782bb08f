import { useEffect, useState } from 'react'
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
    case 'command':
      return COMMANDS.filter((c) => c.name.startsWith(query)).map((c) => ({
        value: c.name,
        label: `/${c.name}${c.args ? ` ${c.args}` : ''}`,
        detail: c.description,
      }))
    case 'model':
      return (info?.models ?? [])
        .filter((m) => m.toLowerCase().includes(query))
        .map((m) => ({ value: m, label: m, ...(m === info?.defaultModel ? { detail: 'default' } : {}) }))
    case 'mention':
      return files.list.map((path) => ({ value: path, label: path }))
  }
}
