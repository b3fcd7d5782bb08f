import DOMPurify from 'dompurify'
import { Marked, type Token, type TokensList } from 'marked'
import { escapeHtml } from './escape.ts'
import { type MarkdownBlock, plainParagraphs } from './plain-markdown.ts'

type Highlighter = typeof import('./highlight.ts')

/**
 * highlight.js loads on demand, off the first paint: until it is there, code
 * blocks render as plain text, are not cached, and `onHighlighterReady`
 * listeners re-render them once it arrives.
 */
let highlighter: Highlighter | undefined
let loading: Promise<void> | undefined
const readyListeners = new Set<() => void>()
let highlighterVersion = 0

function loadHighlighter(): void {
  loading ??= import('./highlight.ts').then(
    (module) => {
      highlighter = module
      cache.clear()
      documents.clear()
      highlighterVersion++
      for (const listener of readyListeners) listener()
    },
    () => {
      loading = undefined // a failed chunk load is retried by the next code block
    },
  )
}

/** Changes when highlighting becomes available, so rendered Markdown can be recomputed. */
export function markdownVersion(): number {
  return highlighterVersion
}

export function onHighlighterReady(listener: () => void): () => void {
  readyListeners.add(listener)
  return () => readyListeners.delete(listener)
}

let renderedPlainCode = false

const marked = new Marked({
  gfm: true,
  renderer: {
    code({ text, lang }) {
      const language = lang?.trim().split(/\s+/, 1)[0] ?? ''
      const label = language ? `<span class="md-code-lang">${escapeHtml(language)}</span>` : ''
      let body: string
      if (highlighter) body = highlighter.highlight(text, language)
      else {
        body = escapeHtml(text)
        if (language) {
          renderedPlainCode = true
          loadHighlighter()
        }
      }
      return `<pre class="md-code">${label}<code class="hljs">${body}</code></pre>`
    },
  },
})

DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A' && node.getAttribute('href')) {
    node.setAttribute('target', '_blank')
    node.setAttribute('rel', 'noopener noreferrer')
  }
})

const cache = new Map<string, string>()
const CACHE_LIMIT = 2000
const documents = new Map<string, MarkdownBlock[]>()
const DOCUMENT_LIMIT = 500

function remember<V>(map: Map<string, V>, limit: number, key: string, value: V): V {
  if (map.size >= limit) map.delete(map.keys().next().value as string)
  map.set(key, value)
  return value
}

/**
 * Markdown split into top-level blocks, each rendered and sanitized once and
 * cached by its source, so a streaming message only re-renders its last block.
 * Plain paragraphs skip the engine (and its regexes' first compilation).
 */
export function markdownBlocks(text: string): MarkdownBlock[] {
  const known = documents.get(text)
  if (known) return known
  renderedPlainCode = false
  const blocks = plainParagraphs(text) ?? split(text)
  return renderedPlainCode ? blocks : remember(documents, DOCUMENT_LIMIT, text, blocks)
}

function split(text: string): MarkdownBlock[] {
  const tokens = marked.lexer(text)
  const blocks: MarkdownBlock[] = []
  let offset = 0
  for (const token of tokens) {
    if (token.type === 'space') {
      offset += token.raw.length
      continue
    }
    blocks.push({ key: `${offset}`, html: renderToken(token, tokens.links) })
    offset += token.raw.length
  }
  return blocks
}

function renderToken(token: Token, links: TokensList['links']): string {
  const hasLinks = Object.keys(links).length > 0
  const cached = hasLinks ? undefined : cache.get(token.raw)
  if (cached !== undefined) return cached
  const list = Object.assign([token], { links }) as TokensList
  const plainBefore = renderedPlainCode
  renderedPlainCode = false
  const html = DOMPurify.sanitize(marked.parser(list))
  const plain = renderedPlainCode
  renderedPlainCode ||= plainBefore
  return hasLinks || plain ? html : remember(cache, CACHE_LIMIT, token.raw, html)
}
