#!/usr/bin/env node
// The plain entry: Node loads every module from lib/ folders. `lib/dsh`, the
// launcher users run, starts from the startup snapshot instead and falls back
// to this file when the snapshot is missing or does not fit the node binary.
import { fileURLToPath } from 'node:url'
import { start } from './start.ts'

await start({ installDir: fileURLToPath(new URL('..', import.meta.url)) })
