import { type Context, Schema } from '@dsh/cordis'
import { checkRoot, type JsonlPersistenceConfig, JsonlSessionPersistence } from './provider.ts'

export {
  checkSessionId,
  type JsonlPersistenceConfig,
  JsonlSessionPersistence,
  parseLog,
  SESSION_LOG_FORMAT,
} from './provider.ts'

export const name = 'session-persistence-jsonl'

export const Config: Schema<JsonlPersistenceConfig> = Schema.object({
  root: Schema.string()
    .required()
    .description(
      "Absolute path of the folder that holds one log per session (bundles set it to `!!js dshHomePath('sessions')`).",
    ),
})

/** Provides `ctx.sessionPersistence`: one JSONL file per session under `root`. */
export function apply(ctx: Context, config: JsonlPersistenceConfig) {
  checkRoot(config.root) // fail this row, not only the inner service
  ctx.plugin(JsonlSessionPersistence, config)
}
