export interface Preload {
  kind: 'import' | 'require'
  specifier: string
}

/** Splits NODE_OPTIONS the way Node does: on spaces, with double quotes and backslash escapes inside them. */
export function splitNodeOptions(text: string): string[] {
  const words: string[] = []
  let word = ''
  let quoted = false
  let started = false
  for (let i = 0; i < text.length; i++) {
    const char = text[i] as string
    if (quoted && char === '\\' && i + 1 < text.length) {
      word += text[++i]
    } else if (char === '"') {
      quoted = !quoted
      started = true
    } else if (char === ' ' && !quoted) {
      if (started) words.push(word)
      word = ''
      started = false
    } else {
      word += char
      started = true
    }
  }
  if (started) words.push(word)
  return words
}

const FLAGS: Record<string, Preload['kind']> = { '--import': 'import', '--require': 'require', '-r': 'require' }

/** The `--import` and `--require` preloads of NODE_OPTIONS, then of the command line, in Node's order. */
export function preloadsOf(execArgv: readonly string[], nodeOptions = ''): Preload[] {
  const preloads: Preload[] = []
  for (const args of [splitNodeOptions(nodeOptions), execArgv]) {
    for (let i = 0; i < args.length; i++) {
      const arg = args[i] as string
      const eq = arg.indexOf('=')
      const flag = eq > 0 ? arg.slice(0, eq) : arg
      const kind = FLAGS[flag]
      if (!kind) continue
      const specifier = eq > 0 ? arg.slice(eq + 1) : args[++i]
      if (specifier) preloads.push({ kind, specifier })
    }
  }
  return preloads
}

/** The blob node was started with (`--snapshot-blob <file>` among its own arguments). */
export function blobOf(execArgv: readonly string[]): string | undefined {
  for (let i = 0; i < execArgv.length; i++) {
    const arg = execArgv[i] as string
    if (arg === '--snapshot-blob') return execArgv[i + 1]
    if (arg.startsWith('--snapshot-blob=')) return arg.slice('--snapshot-blob='.length)
  }
  return undefined
}
