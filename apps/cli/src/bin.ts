#!/usr/bin/env node
import { fileURLToPath } from 'node:url'
import { launch } from '@dsh/app-boot'
import manifest from '../package.json' with { type: 'json' }

// Anything that escapes the launcher is a bug: say so on one line and exit 1.
const fatal = (error: unknown) => {
  process.stderr.write(`dsh: fatal: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
  process.exit(1)
}
process.on('unhandledRejection', fatal)
process.on('uncaughtException', fatal)

const code = await launch({
  argv: process.argv.slice(2),
  installDir: fileURLToPath(new URL('..', import.meta.url)),
  version: manifest.version,
}).catch((error: unknown) => {
  fatal(error)
  return 1
})
// Let stdout drain before exiting; a piped reader must get every byte.
process.stdout.write('', () => process.exit(code))
