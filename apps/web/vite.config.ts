/// <reference types="node" />
import { readdirSync, rmSync } from 'node:fs'
import path from 'node:path'
import react from '@vitejs/plugin-react'
import { defineConfig, type Plugin } from 'vite'
import { RECENT_EVENTS } from './src/lib/recent-history.ts'

// The server (`dsh web`) serves dist/. `pnpm --filter @dsh/web-ui dev` proxies
// the API to a running `dsh web` at DSH_WEB_URL (default http://127.0.0.1:3080),
// presenting the server's own Host and Origin so its checks pass.
const target = process.env.DSH_WEB_URL ?? 'http://127.0.0.1:3080'

/**
 * dist/ is rebuilt in place (a running `dsh web` never sees it empty): files
 * are overwritten, then assets the new build did not write are removed.
 */
function pruneStaleAssets(): Plugin {
  return {
    name: 'dsh-prune-stale-assets',
    apply: 'build',
    writeBundle(options, bundle) {
      const dir = path.join(options.dir ?? 'dist', 'assets')
      const written = new Set(Object.keys(bundle).map((file) => path.basename(file)))
      let names: string[] = []
      try {
        names = readdirSync(dir)
      } catch {
        return
      }
      for (const name of names) if (!written.has(name)) rmSync(path.join(dir, name), { force: true })
    },
  }
}

/** index.html's early load asks for as many recent events as the app does. */
function recentEventsInHtml(): Plugin {
  return {
    name: 'dsh-recent-events',
    transformIndexHtml: (html) => html.replaceAll('%DSH_RECENT_EVENTS%', String(RECENT_EVENTS)),
  }
}

export default defineConfig({
  plugins: [react(), pruneStaleAssets(), recentEventsInHtml()],
  // Workspace packages resolve to their TypeScript sources, so no lib/ build is needed.
  resolve: { conditions: ['dsh-source'] },
  build: {
    outDir: 'dist',
    emptyOutDir: false,
    sourcemap: true,
    rolldownOptions: {
      output: {
        // V8 compiles every function of the entry chunk while it streams the script in, off the
        // main thread, instead of lazily on each first call while the page opens.
        postBanner: (chunk) => (chunk.isEntry ? '//# allFunctionsCalledOnLoad' : ''),
      },
    },
  },
  server: {
    proxy: {
      '/api': {
        target,
        ws: true,
        changeOrigin: true,
        configure: (proxy) => {
          proxy.on('proxyReq', (request) => request.setHeader('origin', target))
          proxy.on('proxyReqWs', (request) => request.setHeader('origin', target))
        },
      },
    },
  },
})
