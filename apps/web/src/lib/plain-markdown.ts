import { escapeHtml } from './escape.ts'

export interface MarkdownBlock {
  key: string
  html: string
}

/**
 * A line Markdown leaves as it is: it starts with a letter, ends without a
 * space and holds only letters, digits, spaces and punctuation that mean
 * nothing to Markdown (no emphasis, code, links, HTML, entities, escapes).
 */
const PLAIN_LINE = /^[A-Za-z](?:[A-Za-z0-9 ,.;:?!'"()%/=+-]*[A-Za-z0-9,.;:?!'"()%/=+-])?$/
/** What GFM turns into a link even without brackets. */
const BARE_URL = /:\/\/|www\./i

/**
 * Text made only of such lines, in paragraphs, rendered without the Markdown
 * engine to the HTML it would produce (escaped text in `<p>`, each block keyed
 * by the offset where it starts). Undefined when anything in it needs the engine.
 */
export function plainParagraphs(text: string): MarkdownBlock[] | undefined {
  if (BARE_URL.test(text)) return undefined
  const blocks: MarkdownBlock[] = []
  let lines: string[] = []
  let start = 0
  let offset = 0
  const close = () => {
    if (lines.length > 0) blocks.push({ key: `${start}`, html: `<p>${escapeHtml(lines.join('\n'))}</p>\n` })
    lines = []
  }
  for (const line of text.split('\n')) {
    if (line === '') close()
    else if (!PLAIN_LINE.test(line)) return undefined
    else {
      if (lines.length === 0) start = offset
      lines.push(line)
    }
    offset += line.length + 1
  }
  close()
  return blocks
}
