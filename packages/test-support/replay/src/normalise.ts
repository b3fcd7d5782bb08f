import { isObject, type SessionLog } from './log.ts'

export interface NormaliseOptions {
  /** The workspace the session ran in, replaced by `<workspace>`. Default: the header's `cwd`. */
  workspace?: string
  /** The `DSH_HOME` of the run, replaced by `<home>`. */
  home?: string
  /** More text to replace anywhere: text → placeholder (for example a real path behind a symlinked temp folder). */
  replace?: Record<string, string>
}

/** A log with its run-specific values taken out; two runs of one scenario normalise to equal values. */
export interface NormalisedLog {
  header: Record<string, unknown>
  events: Record<string, unknown>[]
}

/** Copies a JSON value, rewriting every string (object keys are left alone). */
function mapStrings(value: unknown, rewrite: (text: string) => string): unknown {
  if (typeof value === 'string') return rewrite(value)
  if (Array.isArray(value)) return value.map((item) => mapStrings(item, rewrite))
  if (isObject(value))
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, mapStrings(item, rewrite)]))
  return value
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/**
 * The facts of the machine and day in the system prompt's environment section
 * (date, time zone, kernel), so a scenario compares equal on another machine or day.
 */
export function normaliseMachineFacts(text: string): string {
  return text
    .replace(/- Date: (\d{4}-\d{2}-\d{2}|<date>) \(time zone [^)\\\n]*\)/g, '- Date: <date> (time zone <zone>)')
    .replace(/- Platform: [^;\\\n]*;/g, '- Platform: <platform>;')
}

/**
 * Takes the run-specific values out of a log so that two runs of the same
 * scenario compare equal:
 *
 * - `time` is dropped from every event and `createdAt` from the header;
 * - the session id becomes `<session>` (a parent session `<parent-session>`);
 * - message ids become `<message-1>`, `<message-2>`, … in order of first
 *   appearance, so which events share a message still shows;
 * - checkpoint commits become `<commit-1>`, `<commit-2>`, …;
 * - the workspace path becomes `<workspace>`, the home path `<home>`;
 * - the environment section's date, time zone and platform become placeholders.
 *
 * Replacements apply to every string in the log, wherever it appears (the
 * system prompt, tool arguments, tool output, metadata), longest first. Event
 * types, order, seqs and all other data are kept as they are.
 */
export function normaliseLog(log: SessionLog, options: NormaliseOptions = {}): NormalisedLog {
  const tokens = new Map<string, string>()
  const add = (text: unknown, placeholder: string) => {
    if (typeof text === 'string' && text.length > 0 && !tokens.has(text)) tokens.set(text, placeholder)
  }
  add(log.header.id, '<session>')
  add(log.header.parentSession, '<parent-session>')
  let messages = 0
  let commits = 0
  for (const event of log.events) {
    // Checkpoint commits hash their time: each run makes new ones.
    if (event.type === 'checkpoint/created') add(event.data.commit, `<commit-${++commits}>`)
    const message = event.data.message
    if (isObject(message) && typeof message.id === 'string' && !tokens.has(message.id))
      add(message.id, `<message-${++messages}>`)
  }
  add(options.workspace ?? log.header.cwd, '<workspace>')
  add(options.home, '<home>')
  for (const [text, placeholder] of Object.entries(options.replace ?? {})) add(text, placeholder)

  const keys = [...tokens.keys()].sort((a, b) => b.length - a.length)
  const pattern = keys.length > 0 ? new RegExp(keys.map(escapeRegExp).join('|'), 'g') : undefined
  const rewrite = (text: string) =>
    normaliseMachineFacts(pattern ? text.replace(pattern, (match) => tokens.get(match) ?? match) : text)

  const { createdAt: _createdAt, ...header } = log.header
  return {
    header: mapStrings(header, rewrite) as Record<string, unknown>,
    events: log.events.map(({ time: _time, ...event }) => mapStrings(event, rewrite) as Record<string, unknown>),
  }
}
