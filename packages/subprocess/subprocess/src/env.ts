/** Variable names that must not reach spawned commands: anything that looks like a credential. */
export const SENSITIVE_ENV_NAME = /KEY|SECRET|TOKEN|PASSWORD/i

/**
 * A copy of `env` without the variables whose names contain KEY, SECRET,
 * TOKEN or PASSWORD (in any case), and without unset entries.
 */
export function scrubEnvironment(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const clean: Record<string, string> = {}
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && !SENSITIVE_ENV_NAME.test(name)) clean[name] = value
  }
  return clean
}
