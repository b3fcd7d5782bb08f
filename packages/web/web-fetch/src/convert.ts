import { decodeHTML } from 'entities/decode'
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

/** The page as Markdown, headed by its title. */
export function convertHtml(html: string): string {
  const title = TITLE.exec(html)?.[1]?.replace(/\s+/g, ' ').trim()
  const body = markdownService()
    .turndown(html)
    .replace(/\n{3,}/g, '\n\n')
    .trim()
  return title ? `# ${decodeHTML(title)}\n\n${body}` : body
}
