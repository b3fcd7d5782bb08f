import type { StreamChunk } from '@dsh/llm'

/** A credential value to keep out of logs and output, with the name its placeholder shows. */
export interface NamedSecret {
  name: string
  value: string
}

/** What a secret becomes wherever it would have appeared. */
export const placeholder = (name: string) => `[redacted: ${name}]`

/**
 * The secrets worth redacting: values of at least `minLength` characters
 * (shorter ones would hit common words), one entry per value, longest
 * first so that a secret containing another is replaced whole.
 */
export function redactable(secrets: readonly NamedSecret[], minLength: number): NamedSecret[] {
  const byValue = new Map<string, NamedSecret>()
  for (const secret of secrets)
    if (secret.value.length >= minLength && !byValue.has(secret.value)) byValue.set(secret.value, secret)
  return [...byValue.values()].sort((a, b) => b.value.length - a.value.length)
}

/** `text` with every occurrence of each secret replaced by its placeholder; the same string when none occurs. */
export function redactText(text: string, secrets: readonly NamedSecret[]): string {
  let out = text
  for (const { name, value } of secrets) if (out.includes(value)) out = out.split(value).join(placeholder(name))
  return out
}

/** The length of the longest end of `text` that could be the start of a secret (a secret split across deltas). */
function pendingPrefix(text: string, secrets: readonly NamedSecret[]): number {
  let longest = 0
  for (const { value } of secrets) {
    for (let k = Math.min(text.length, value.length - 1); k > longest; k--) {
      if (text.endsWith(value.slice(0, k))) {
        longest = k
        break
      }
    }
  }
  return longest
}

type Delta = Extract<StreamChunk, { type: 'text-delta' | 'reasoning-delta' | 'tool-call-delta' }>

/**
 * Redacts a model stream: the text of each delta run (text, reasoning, or
 * one tool call's arguments) is redacted as it goes, and an end that could
 * be the start of a secret is held back until the next delta of the same run
 * shows whether it is one. A different run, usage or the finish lets the held
 * text go first, so the order of the stream is kept.
 */
export async function* redactStream(
  source: AsyncIterable<StreamChunk>,
  secrets: readonly NamedSecret[],
): AsyncIterable<StreamChunk> {
  let held: { chunk: Delta; text: string } | undefined
  const release = (): Delta | undefined => {
    if (!held) return undefined
    const out = withText(held.chunk, redactText(held.text, secrets))
    held = undefined
    return out
  }
  for await (const chunk of source) {
    if (chunk.type !== 'text-delta' && chunk.type !== 'reasoning-delta' && chunk.type !== 'tool-call-delta') {
      const rest = release()
      if (rest) yield rest
      yield chunk
      continue
    }
    if (held && (held.chunk.type !== chunk.type || held.chunk.index !== chunk.index)) {
      const rest = release()
      if (rest) yield rest
    }
    const text = redactText((held?.text ?? '') + textOf(chunk), secrets)
    const keep = pendingPrefix(text, secrets)
    const ready = text.slice(0, text.length - keep)
    // The first delta of a tool call carries its id and name: it goes out even with no text.
    if (ready || hasIdentity(chunk)) yield withText(chunk, ready)
    held = keep ? { chunk: stripIdentity(chunk), text: text.slice(text.length - keep) } : undefined
  }
  const rest = release()
  if (rest) yield rest
}

function textOf(chunk: Delta): string {
  return chunk.type === 'tool-call-delta' ? chunk.argumentsDelta : chunk.text
}

function withText(chunk: Delta, text: string): Delta {
  return chunk.type === 'tool-call-delta' ? { ...chunk, argumentsDelta: text } : { ...chunk, text }
}

function hasIdentity(chunk: Delta): boolean {
  return chunk.type === 'tool-call-delta' && (chunk.id !== undefined || chunk.name !== undefined)
}

function stripIdentity(chunk: Delta): Delta {
  if (chunk.type !== 'tool-call-delta') return chunk
  const { id: _id, name: _name, ...rest } = chunk
  return rest
}
