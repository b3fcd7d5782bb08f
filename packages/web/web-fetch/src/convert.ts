import TurndownService from 'turndown'

/** The little of a DOM element these rules read (the host build has no DOM typings). */
interface ElementLike {
  getAttribute(name: string): string | null
  textContent: string | null
}

const DROPPED = [
  'script',
  'style',
  'noscript',
  'template',
  'iframe',
  'svg',
  'canvas',
  'head',
  'title',
  'meta',
  'link',
  'object',
  'embed',
] as TurndownService.TagName[]

function markdownService(): TurndownService {
  const service = new TurndownService({
    headingStyle: 'atx',
    codeBlockStyle: 'fenced',
    bulletListMarker: '-',
    emDelimiter: '*',
  })
  service.remove(DROPPED)
  return service
}

/** Markdown rules that keep only the words: links become their text, images their alt text, no escaping. */
function textService(): TurndownService {
  const service = markdownService()
  service.escape = (text: string) => text
  service.addRule('plain-inline', {
    filter: ['a', 'strong', 'b', 'em', 'i', 'code', 'del', 's', 'u', 'mark', 'small', 'sub', 'sup'],
    replacement: (content) => content,
  })
  service.addRule('plain-image', {
    filter: 'img',
    replacement: (_content, node) => (node as unknown as ElementLike).getAttribute('alt') ?? '',
  })
  service.addRule('plain-heading', {
    filter: ['h1', 'h2', 'h3', 'h4', 'h5', 'h6'],
    replacement: (content) => `\n\n${content}\n\n`,
  })
  service.addRule('plain-pre', {
    filter: 'pre',
    replacement: (_content, node) => `\n\n${(node as unknown as ElementLike).textContent ?? ''}\n\n`,
  })
  return service
}

const TITLE = /<title[^>]*>([\s\S]*?)<\/title>/i

function decodeEntities(text: string): string {
  return text
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;|&apos;/g, "'")
    .replace(/&#(\d+);/g, (_, code: string) => String.fromCodePoint(Number(code)))
    .replace(/&amp;/g, '&')
}

/** The page as Markdown (`markdown`) or plain text (`text`), headed by its title. */
export function convertHtml(html: string, format: 'markdown' | 'text'): string {
  const title = TITLE.exec(html)?.[1]?.replace(/\s+/g, ' ').trim()
  const body = (format === 'markdown' ? markdownService() : textService())
    .turndown(html)
    .replace(/\n{3,}/g, '\n\n')
    .trim()
  return title ? `${format === 'markdown' ? '# ' : ''}${decodeEntities(title)}\n\n${body}` : body
}
