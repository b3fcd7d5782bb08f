/**
 * Credential-like variables, each named by a different secret pattern
 * (`*_TOKEN`, `*api_key*` in lower case, `*PASSWORD*`, a cloud secret key).
 * Every value holds `leak-`, so a test of a child's environment checks that
 * none of them arrived.
 */
export const LEAKY_ENVIRONMENT: Readonly<Record<string, string>> = {
  FOO_TOKEN: 'leak-token',
  my_api_key: 'leak-api-key',
  DB_PASSWORD: 'leak-password',
  AWS_SECRET_ACCESS_KEY: 'leak-secret-key',
}

/**
 * Runs `body` with `variables` added to `process.env` (for children the test
 * starts), then puts `process.env` back as it was, whether `body` fails or not.
 */
export async function withEnvironment<T>(variables: Record<string, string>, body: () => Promise<T>): Promise<T> {
  const saved = { ...process.env }
  Object.assign(process.env, variables)
  try {
    return await body()
  } finally {
    for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key]
    Object.assign(process.env, saved)
  }
}
