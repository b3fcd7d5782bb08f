import type { Composed, Origin } from './patch.ts'
import type { Row } from './rows.ts'
import { stringifyYaml } from './yaml.ts'

function provenance(origin: Origin | undefined): string {
  if (!origin) return 'unknown layer'
  return origin.patchedBy.length ? `${origin.from}, patched by ${origin.patchedBy.join(', ')}` : origin.from
}

function plainRow(row: Row): Record<string, unknown> {
  const out: Record<string, unknown> = { id: row.id }
  if (row.name !== undefined) out.name = row.name
  if (row.group) out.group = true
  if (row.disabled !== undefined) out.disabled = row.disabled
  if (row.inject !== undefined) out.inject = row.inject
  if (row.group) out.config = (row.config as Row[]).map(plainRow)
  else if (row.config !== undefined) out.config = row.config
  return out
}

/**
 * Prints a composed tree as a loadable patch list (one `insert` of all
 * rows would also do, but a plain row list is what `cordis.yml` holds).
 * Each run of rows with the same provenance starts with a comment naming the
 * layer that inserted the rows and the layers that patched them.
 */
export function renderComposed({ rows, origins }: Composed): string {
  const comments = new Map<string, string>()
  const mark = (list: Row[], path: string, inherited: string | null) => {
    let previous = inherited
    list.forEach((row, i) => {
      const key = path ? `${path}.${i}` : String(i)
      const label = provenance(origins.get(row.id))
      if (label !== previous) comments.set(key, ` == ${label}`)
      previous = label
      if (row.group) mark(row.config as Row[], key, label)
    })
  }
  mark(rows, '', null)
  if (rows.length === 0) return '[]\n'
  return stringifyYaml(rows.map(plainRow), comments)
}
