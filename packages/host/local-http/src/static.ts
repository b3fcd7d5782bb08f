import { createReadStream, existsSync } from 'node:fs'
import { stat } from 'node:fs/promises'
import type { IncomingMessage, ServerResponse } from 'node:http'
import path from 'node:path'

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.webmanifest': 'application/manifest+json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.ttf': 'font/ttf',
  '.txt': 'text/plain; charset=utf-8',
  '.wasm': 'application/wasm',
}

/** The built app a server serves outside `/api`, and what it is called and built with in messages. */
export interface StaticApp {
  dir: string
  /** Names the server in messages, e.g. `dsh web`. */
  label: string
  /** The command that builds the app, shown when it is missing. */
  buildCommand: string
}

/** Whether the built app is where the server looks for it. */
export function hasBuild(dir: string): boolean {
  return existsSync(path.join(dir, 'index.html'))
}

export function missingBuildText({ dir, buildCommand }: StaticApp): string {
  return `the browser app is not built: ${path.join(dir, 'index.html')} is missing. Build it with: ${buildCommand}`
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}

function missingBuildPage({ dir, label, buildCommand }: StaticApp): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(label)}: app not built</title></head>
<body style="font-family:system-ui,sans-serif;max-width:40rem;margin:4rem auto;line-height:1.5">
<h1>The browser app of ${escapeHtml(label)} is not built</h1>
<p>The server is running, but <code>${escapeHtml(path.join(dir, 'index.html'))}</code> does not exist.</p>
<p>Build it, then reload this page:</p>
<pre style="background:#eee;padding:1rem">${escapeHtml(buildCommand)}</pre>
</body></html>`
}

/** Resolves a URL path inside `dir`, or undefined when it would leave it. */
function fileFor(dir: string, urlPath: string): string | undefined {
  let decoded: string
  try {
    decoded = decodeURIComponent(urlPath)
  } catch {
    return undefined
  }
  if (decoded.includes('\0')) return undefined
  const file = path.resolve(dir, `.${path.posix.normalize(decoded)}`)
  return file === dir || file.startsWith(`${dir}${path.sep}`) ? file : undefined
}

function send(
  req: IncomingMessage,
  res: ServerResponse,
  status: number,
  headers: Record<string, string | number>,
  body: string,
): void {
  res.writeHead(status, { 'content-length': Buffer.byteLength(body), 'x-content-type-options': 'nosniff', ...headers })
  res.end(req.method === 'HEAD' ? undefined : body)
}

async function regularFile(file: string): Promise<{ size: number; mtime: Date } | undefined> {
  try {
    const info = await stat(file)
    return info.isFile() ? info : undefined
  } catch {
    return undefined
  }
}

/**
 * Serves the built app from `app.dir` for GET and HEAD: files as they are,
 * extension-less paths fall back to index.html (client-side routes), hashed
 * assets are cached for good, index.html never. A missing build answers 503
 * with a page that says how to build it.
 */
export async function serveStatic(
  req: IncomingMessage,
  res: ServerResponse,
  app: StaticApp,
  urlPath: string,
): Promise<void> {
  const { dir } = app
  if (!hasBuild(dir)) {
    send(
      req,
      res,
      503,
      { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' },
      missingBuildPage(app),
    )
    return
  }
  const notFound = () => send(req, res, 404, { 'content-type': 'text/plain; charset=utf-8' }, `not found: ${urlPath}\n`)
  let file = fileFor(dir, urlPath)
  if (!file) return notFound()
  let info = await regularFile(file)
  if (!info) {
    if (path.posix.extname(urlPath) !== '') return notFound()
    file = path.join(dir, 'index.html')
    info = await regularFile(file)
    if (!info) return notFound()
  }
  const ext = path.extname(file).toLowerCase()
  const hashed = urlPath.startsWith('/assets/')
  res.writeHead(200, {
    'content-type': TYPES[ext] ?? 'application/octet-stream',
    'content-length': info.size,
    'last-modified': info.mtime.toUTCString(),
    'cache-control': hashed ? 'public, max-age=31536000, immutable' : 'no-cache',
    'x-content-type-options': 'nosniff',
    ...(ext === '.html' ? { 'referrer-policy': 'no-referrer', 'x-frame-options': 'DENY' } : {}),
  })
  if (req.method === 'HEAD') {
    res.end()
    return
  }
  await new Promise<void>((resolve) => {
    const stream = createReadStream(file)
    stream.on('error', () => {
      res.destroy()
      resolve()
    })
    stream.on('end', () => resolve())
    stream.pipe(res)
  })
}
