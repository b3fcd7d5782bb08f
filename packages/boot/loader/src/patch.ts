import path from 'node:path'
import { ConfigError } from './errors.ts'
import {
  checkChildren,
  checkDisabled,
  checkInject,
  checkRow,
  cloneValue,
  describe,
  isPlainObject,
  type Row,
  walkRows,
} from './rows.ts'
import { parseYaml } from './yaml.ts'

/**
 * One entry of a patch list. With `insert`, rows are appended at the top
 * level (no id) or into the group `id`. Without it, the entry targets row
 * `id` and replaces each of `config`, `disabled`, `inject` it names.
 */
export interface PatchEntry {
  id?: string
  name?: string
  insert?: Row[]
  set: Partial<Pick<Row, 'config' | 'disabled' | 'inject'>>
}

/** A parsed patch file: `label` is what errors and dumps call it (a package name or a path). */
export interface Layer {
  label: string
  entries: PatchEntry[]
}

const ENTRY_KEYS = new Set(['id', 'name', 'insert', 'config', 'disabled', 'inject'])

function isRelativeName(name: string): boolean {
  return name.startsWith('./') || name.startsWith('../') || name === '.' || name === '..'
}

/**
 * Parses and checks a patch file. Relative module names are made absolute
 * against `baseDir`, the folder of the file they were written in.
 */
export function parsePatchList(text: string, label: string, baseDir: string): Layer {
  const data = parseYaml(text, label)
  if (!Array.isArray(data)) {
    throw new ConfigError(
      `${label}: a patch file must be a top-level YAML list of patch entries, got ${describe(data)} (write [] for an empty layer)`,
    )
  }
  const rewriteName = (name: string) => (isRelativeName(name) ? path.resolve(baseDir, name) : name)
  const entries = data.map((raw, i) => checkEntry(raw, `${label}: entry ${i + 1}`, rewriteName))
  return { label, entries }
}

function checkEntry(raw: unknown, where: string, rewriteName: (name: string) => string): PatchEntry {
  if (!isPlainObject(raw)) throw new ConfigError(`${where}: a patch entry must be a mapping, got ${describe(raw)}`)
  const entry: PatchEntry = { set: {} }
  if (raw.id !== undefined) {
    if (typeof raw.id !== 'string' || raw.id.length === 0)
      throw new ConfigError(`${where}: "id" must be a non-empty string`)
    entry.id = raw.id
  }
  const at = entry.id ? `${where} (id "${entry.id}")` : where
  for (const key of Object.keys(raw)) {
    if (!ENTRY_KEYS.has(key)) {
      throw new ConfigError(`${at}: unknown key "${key}" (a patch entry has ${[...ENTRY_KEYS].join(', ')})`)
    }
  }
  if (raw.insert !== undefined) {
    for (const key of ['name', 'config', 'disabled', 'inject']) {
      if (key in raw)
        throw new ConfigError(`${at}: an insert entry takes only "id" (the target group) and "insert", not "${key}"`)
    }
    if (!Array.isArray(raw.insert))
      throw new ConfigError(`${at}: "insert" must be a list of rows, got ${describe(raw.insert)}`)
    entry.insert = raw.insert.map((row, i) => checkRow(row, `${at}, insert ${i + 1}`, rewriteName))
    return entry
  }
  if (!entry.id) throw new ConfigError(`${where}: an entry without "insert" needs the "id" of the row it patches`)
  if (raw.name !== undefined) {
    if (typeof raw.name !== 'string') throw new ConfigError(`${at}: "name" must be a module name`)
    entry.name = rewriteName(raw.name)
  }
  if ('config' in raw) entry.set.config = raw.config
  if ('disabled' in raw) entry.set.disabled = checkDisabled(raw.disabled, at)
  if ('inject' in raw) entry.set.inject = checkInject(raw.inject, at)
  if (Object.keys(entry.set).length === 0) {
    throw new ConfigError(`${at}: the entry changes nothing (give "config", "disabled" or "inject")`)
  }
  return entry
}

/** Where a row came from: the layer that inserted it and the layers that patched it. */
export interface Origin {
  from: string
  patchedBy: string[]
}

export interface Composed {
  rows: Row[]
  origins: Map<string, Origin>
}

/**
 * Applies layers in order to an empty tree. Pure: the layers are not touched,
 * and any error (unknown id, duplicate id, name mismatch, not a group) throws
 * before a result exists, naming the layer and entry.
 */
export function applyPatches(layers: Layer[]): Composed {
  const rows: Row[] = []
  const index = new Map<string, Row>()
  const origins = new Map<string, Origin>()

  const addSubtree = (added: Row[], label: string, where: string) => {
    for (const { row } of walkRows(added)) {
      const existing = origins.get(row.id)
      if (index.has(row.id)) {
        throw new ConfigError(`${where}: row id "${row.id}" already exists (inserted by ${existing?.from})`)
      }
      index.set(row.id, row)
      origins.set(row.id, { from: label, patchedBy: [] })
    }
  }
  const dropSubtree = (removed: Row[]) => {
    for (const { row } of walkRows(removed)) {
      index.delete(row.id)
      origins.delete(row.id)
    }
  }

  for (const layer of layers) {
    layer.entries.forEach((entry, i) => {
      const where = `${layer.label}: entry ${i + 1}`
      if (entry.insert) {
        const added = cloneValue(entry.insert)
        let target = rows
        if (entry.id !== undefined) {
          const group = index.get(entry.id)
          if (!group) throw new ConfigError(`${where}: no group with id "${entry.id}" to insert into`)
          if (!group.group)
            throw new ConfigError(`${where}: row "${entry.id}" is not a group, so rows cannot be inserted into it`)
          target = group.config as Row[]
        }
        addSubtree(added, layer.label, where)
        target.push(...added)
        return
      }
      const id = entry.id as string
      const row = index.get(id)
      if (!row) throw new ConfigError(`${where}: no row with id "${id}" to patch`)
      if (entry.name !== undefined && entry.name !== row.name) {
        throw new ConfigError(`${where}: row "${id}" loads "${row.name}", not "${entry.name}"`)
      }
      if ('config' in entry.set) {
        if (row.group) {
          const children = checkChildren(entry.set.config, `${where} (id "${id}")`)
          dropSubtree(row.config as Row[])
          addSubtree(children, layer.label, where)
          row.config = children
        } else {
          row.config = cloneValue(entry.set.config)
        }
      }
      if ('disabled' in entry.set) row.disabled = entry.set.disabled
      if ('inject' in entry.set) row.inject = [...(entry.set.inject ?? [])]
      const origin = origins.get(id) as Origin
      if (origin.from !== layer.label && !origin.patchedBy.includes(layer.label)) origin.patchedBy.push(layer.label)
    })
  }
  return { rows, origins }
}
