/** The Chromium that the browser tests and the web benchmark drive: Debian's, unless DSH_CHROMIUM names another. */
export const chromiumPath = process.env.DSH_CHROMIUM ?? '/usr/bin/chromium'

/** Flags for headless Chromium here: no sandbox (we run as root), no GPU, no traffic of its own. */
export const chromiumArgs: readonly string[] = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
]
