import { Schema, stringList, stringValue } from '@dsh/cordis'

export interface WebFetchConfig {
  timeoutMs: number
  connectTimeoutMs: number
  headersTimeoutMs: number
  bodyTimeoutMs: number
  maxBytes: number
  maxOutputChars: number
  maxRedirects: number
  maxUrlLength: number
  allowPrivate: boolean
  allowHosts: string[]
  userAgent: string
}

export const Config: Schema<WebFetchConfig> = Schema.object({
  timeoutMs: Schema.natural()
    .min(1)
    .default(60_000)
    .description('Budget of one web_fetch call, redirects included, in milliseconds.'),
  connectTimeoutMs: Schema.natural()
    .min(1)
    .default(10_000)
    .description('Longest wait for a TCP/TLS connection, in milliseconds.'),
  headersTimeoutMs: Schema.natural()
    .min(1)
    .default(30_000)
    .description('Longest wait for the response headers once connected, in milliseconds.'),
  bodyTimeoutMs: Schema.natural()
    .min(1)
    .default(30_000)
    .description('Longest silence between two pieces of the body, in milliseconds.'),
  maxBytes: Schema.natural()
    .min(1)
    .default(5 * 1024 * 1024)
    .description(
      'Bytes of a (decompressed) body read at most; a longer or endless page is cut there. A call may ask for less.',
    ),
  maxOutputChars: Schema.natural()
    .min(1)
    .default(100_000)
    .description(
      'Characters of the converted page shown to the model; the whole text is saved with ctx.spill when it is longer.',
    ),
  maxRedirects: Schema.natural()
    .default(5)
    .description('Redirects followed at most; every hop passes the address check again.'),
  maxUrlLength: Schema.natural().min(1).default(2048).description('Longest URL accepted.'),
  allowPrivate: Schema.boolean()
    .default(false)
    .description(
      'Let web_fetch reach loopback, private, link-local (cloud metadata), CGNAT and other non-public addresses.',
    ),
  allowHosts: stringList(
    'Host names (or `*.domain` patterns, or IP literals) exempt from the address check, e.g. an intranet host.',
  ),
  userAgent: stringValue('The User-Agent header sent.', 'Mozilla/5.0 (compatible; dsh-web-fetch/0.1)'),
})
