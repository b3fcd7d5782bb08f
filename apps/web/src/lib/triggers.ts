/** What the text at the caret asks the composer to suggest. */
export type Trigger =
  | { kind: 'command'; query: string }
  | { kind: 'model'; query: string }
  | { kind: 'mention'; query: string; start: number; end: number }

export function triggerAt(text: string, caret: number): Trigger | undefined {
  const before = text.slice(0, caret)
  const model = before.match(/^\/model\s+(\S*)$/)
  if (model) return { kind: 'model', query: model[1] ?? '' }
  const command = before.match(/^\/(\S*)$/)
  if (command) return { kind: 'command', query: command[1] ?? '' }
  const mention = before.match(/(?:^|\s)@([^\s@]*)$/)
  if (mention) {
    const query = mention[1] ?? ''
    return { kind: 'mention', query, start: caret - query.length - 1, end: caret }
  }
  return undefined
}

/** Replaces the `@query` before the caret with `@path ` and returns the new text and caret. */
export function insertMention(text: string, trigger: Extract<Trigger, { kind: 'mention' }>, path: string): { text: string; caret: number } {
  const quoted = /\s/.test(path) ? `@"${path}" ` : `@${path} `
  return { text: text.slice(0, trigger.start) + quoted + text.slice(trigger.end), caret: trigger.start + quoted.length }
}
