import TurndownService from 'turndown'

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

/** The page as Markdown, headed by its title. */
export function convertHtml(html: string): string {
  const title = TITLE.exec(html)?.[1]?.replace(/\s+/g, ' ').trim()
  const body = markdownService()
    .turndown(html)
    .replace(/\n{3,}/g, '\n\n')
    .trim()
  return title ? `# ${decodeEntities(title)}\n\n${body}` : body
}
