import { spawn } from 'node:child_process'
import { scrubEnvironment } from '@dsh/subprocess'
import { errorMessage } from '@dsh/tools'

/** Whether this process runs in an SSH session, where a local browser would open on the wrong machine. */
export function inSshSession(env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(env.SSH_CONNECTION?.trim() || env.SSH_TTY?.trim())
}

/**
 * The user's browser gets the default environment policy, except that it
 * keeps XAUTHORITY: an X11 browser cannot reach the display without its
 * cookie file. The browser is the user's program, not the model's.
 */
function browserEnvironment(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  return { ...scrubEnvironment(env), ...(env.XAUTHORITY ? { XAUTHORITY: env.XAUTHORITY } : {}) }
}

/**
 * Opens `url` in the default browser, detached; a failure is reported on
 * stderr (prefixed with `label`, e.g. `dsh web`) and otherwise ignored.
 */
export function openInBrowser(url: string, label: string): void {
  const [command, args] =
    process.platform === 'darwin'
      ? ['open', [url]]
      : process.platform === 'win32'
        ? ['cmd', ['/c', 'start', '""', url]]
        : ['xdg-open', [url]]
  const complain = (why: string) =>
    process.stderr.write(`${label}: could not open a browser (${command}: ${why}); open ${url} yourself\n`)
  try {
    const child = spawn(command, args as string[], { detached: true, stdio: 'ignore', env: browserEnvironment() })
    child.on('error', (error) => complain(error.message))
    child.unref()
  } catch (error) {
    complain(errorMessage(error))
  }
}
