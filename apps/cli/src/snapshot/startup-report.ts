// Which way a process started, for people and tests that need to know:
// `DSH_DEBUG_STARTUP=1` prints one `dsh: startup: <how>` line on stderr.

/** The environment variable that turns the startup report on. */
export const DEBUG_STARTUP_ENV = 'DSH_DEBUG_STARTUP'

/** Set by the builder of a cached snapshot when it tries the new blob; the start answers and exits. */
export const SNAPSHOT_PROBE_ENV = 'DSH_SNAPSHOT_PROBE'
export const SNAPSHOT_PROBE_ANSWER = 'dsh-snapshot-ok\n'

export function reportStartup(how: string, env: NodeJS.ProcessEnv = process.env): void {
  if (env[DEBUG_STARTUP_ENV] === '1') process.stderr.write(`dsh: startup: ${how}\n`)
}
