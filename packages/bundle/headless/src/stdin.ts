const MIB = 1024 * 1024

/** The most standard input a task may carry: about what a 1M-token context window holds. */
export const STDIN_LIMIT_BYTES = 4 * MIB

/**
 * Reads `input` to its end as UTF-8 text, without its trailing whitespace.
 * Rejects, with a message that says what to do instead, input over `limit`
 * bytes, binary input (a NUL byte) and bytes that are not UTF-8.
 */
export async function readTaskInput(input: NodeJS.ReadableStream, limit = STDIN_LIMIT_BYTES): Promise<string> {
  const chunks: Buffer[] = []
  let bytes = 0
  for await (const chunk of input) {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : chunk
    bytes += buffer.length
    if (bytes > limit) {
      const size = limit % MIB === 0 ? `${limit / MIB} MiB` : `${limit} bytes`
      throw new Error(
        `standard input holds more than ${size}; save it to a file in the workspace and name the file in the task`,
      )
    }
    chunks.push(buffer)
  }
  const all = Buffer.concat(chunks)
  const nul = all.indexOf(0)
  if (nul !== -1) throw new Error(`standard input is binary (a NUL byte at offset ${nul}); the task must be text`)
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(all).trimEnd()
  } catch {
    throw new Error('standard input is not UTF-8 text')
  }
}

/** The task from its words and the text read from standard input, a blank line apart. */
export function joinTask(words: string, input: string): string {
  return [words, input].filter((part) => part.trim() !== '').join('\n\n')
}
