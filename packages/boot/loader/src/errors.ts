/**
 * A mistake in the composition: a patch file, a row, a module name or a
 * config. The message names the culprit (layer file, entry, row id, field).
 */
export class ConfigError extends Error {
  override name = 'ConfigError'
}
