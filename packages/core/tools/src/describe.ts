import path from 'node:path'
import { DIAGNOSTIC_SEVERITIES, diagnosticLine, type FileDiagnostic, type SessionEvent } from '@dsh/wire-types'
import type { CallArguments, ToolCallPresentation, ToolDefinition, ToolPresentation } from './types.ts'

/** A call's arguments as the model sent them (a JSON string), parsed; undefined unless they are a JSON object. */
export function parseCallArguments(raw: string): CallArguments | undefined {
  try {
    const value: unknown = JSON.parse(raw || '{}')
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as CallArguments) : undefined
  } catch {
    return undefined
  }
}

/** A non-empty string argument, else undefined. */
export function textArgument(args: CallArguments, name: string): string | undefined {
  const value = args[name]
  return typeof value === 'string' && value.length > 0 ? value : undefined
}

/** The path argument of a call (`path`, else `file_path`), if any. */
export function callTarget(args: CallArguments): string | undefined {
  return textArgument(args, 'path') ?? textArgument(args, 'file_path')
}

/** A path as the user reads it: relative inside `cwd`, absolute outside. */
export function shownPath(cwd: string, given: string): string {
  const absolute = path.resolve(cwd, given)
  const relative = path.relative(cwd, absolute)
  if (relative === '') return '.'
  return relative.startsWith('..') || path.isAbsolute(relative) ? absolute : relative
}

/** Text on one line, at most 200 characters. */
export function oneLine(value: string): string {
  const line = value.replace(/\s*\n\s*/g, ' ').trim()
  return line.length > 200 ? `${line.slice(0, 199)}…` : line
}

/** What a tool without a presentation of its own shows: its name, with a description or path argument if any. */
export const GENERIC_PRESENTATION: ToolPresentation = {
  kind: 'other',
  view: 'generic',
}

function genericTitle(name: string, args: CallArguments, shown: (given: string) => string): string {
  const target = callTarget(args)
  const about = textArgument(args, 'description') ?? (target ? shown(target) : undefined)
  return about ? `${name}: ${oneLine(about)}` : name
}

/**
 * How surfaces show one call of a tool: its presentation (the generic one
 * when the tool has none or is not registered) applied to the raw arguments.
 * Unparsable arguments give the tool's name as title and nothing else.
 * A presentation function that throws counts as absent.
 */
export function presentCall(
  name: string,
  definition: Pick<ToolDefinition, 'presentation'> | undefined,
  rawArguments: string,
  cwd: string,
): ToolCallPresentation {
  const presentation = definition?.presentation ?? GENERIC_PRESENTATION
  const base: ToolCallPresentation = {
    title: name,
    kind: presentation.kind,
    view: presentation.view,
    locations: [],
    unfolded: presentation.unfolded === true || presentation.view === 'diff' || presentation.view === 'terminal',
  }
  const args = parseCallArguments(rawArguments)
  if (!args) return base
  const shown = (given: string) => shownPath(cwd, given)
  const title = attempt(() => (presentation.title ? presentation.title(args, shown) : genericTitle(name, args, shown)))
  const given = attempt(() => (presentation.locations ? presentation.locations(args) : [callTarget(args)]))
  const change = attempt(() => presentation.change?.(args))
  const command = attempt(() => presentation.command?.(args))
  return {
    ...base,
    ...(typeof title === 'string' && title.length > 0 ? { title } : {}),
    locations: (Array.isArray(given) ? given : [])
      .filter((p): p is string => typeof p === 'string' && p !== '')
      .map((p) => path.resolve(cwd, p)),
    ...(change ? { change: { ...change, path: path.resolve(cwd, change.path) } } : {}),
    ...(typeof command === 'string' ? { command } : {}),
  }
}

function attempt<T>(run: () => T): T | undefined {
  try {
    return run()
  } catch {
    return undefined
  }
}

/** "2 errors, 1 warning": the count of each severity present, most severe first. */
export function diagnosticCounts(items: readonly FileDiagnostic[]): string {
  return DIAGNOSTIC_SEVERITIES.map((severity) => {
    const count = items.filter((item) => item.severity === severity).length
    const noun = severity === 'information' ? 'note' : severity
    return count ? `${count} ${noun}${count === 1 ? '' : 's'}` : ''
  })
    .filter(Boolean)
    .join(', ')
}

/** One finding as a line: `src/a.ts:12:5 error TS2322: message`, its path relative to `root` when inside it. */
export function formatDiagnostic(item: FileDiagnostic, root: string): string {
  return diagnosticLine(item, shownPath(root, item.path))
}

/**
 * A session event as a surface shows it. A `tool/call` also carries
 * `presentation`: how its tool shows the call (title, kind, view, change,
 * command; `present` of the tool runtime, when there is one), worked out on
 * the way out and never logged, so the log and what the model is sent stay
 * as they are.
 */
export function withPresentation(
  tools: { present(call: { name: string; arguments: string }, cwd: string): ToolCallPresentation } | undefined,
  event: SessionEvent,
  cwd: string,
): SessionEvent {
  if (event.type !== 'tool/call' || !tools) return event
  const data = event.data as SessionEvent<'tool/call'>['data']
  return { ...event, data: { ...data, presentation: tools.present(data, cwd) } } as SessionEvent
}
