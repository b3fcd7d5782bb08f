import { Schema } from '@dsh/cordis'
import { sideCallFields } from '@dsh/llm'

export interface CompactionConfig {
  auto: boolean
  thresholdRatio: number
  contextWindow?: number
  keepTurns: number
  keepSteps: number
  pruneMinChars: number
  charsPerToken: number
  imageTokens: number
  provider?: string
  model?: string
  maxTokens: number
  transcriptBlockChars: number
  maxOverflowRetries: number
  prompt: string
}

export const DEFAULT_PROMPT = [
  'You write the memory of a coding agent. The conversation below is about to be removed from its context; your summary',
  'replaces it, so the agent must be able to continue the work from the summary alone. Cover, as concise bullet points:',
  "- the user's requests and constraints (quote exact wording where it matters),",
  '- what has been done: files read or changed (with paths), commands run and their outcomes,',
  '- facts, decisions and findings the agent will need again (names, values, error messages),',
  '- what went wrong and how it was resolved,',
  '- what remains to be done next.',
  'Write only the summary, with no preamble.',
].join('\n')

export const Config: Schema<CompactionConfig> = Schema.object({
  auto: Schema.boolean()
    .default(true)
    .description(
      'Compact on context pressure (before a step) and on a context-overflow failure. Off: only `compact()` (the /compact command).',
    ),
  thresholdRatio: Schema.number()
    .min(0.05)
    .max(1)
    .default(0.8)
    .description("Compact when the context reaches this share of the model's context window."),
  contextWindow: Schema.natural()
    .min(1)
    .description('Context window in tokens, used when neither the model route nor the log says how large it is.'),
  keepTurns: Schema.natural()
    .min(1)
    .default(1)
    .description(
      'The newest turns kept out of the summary (their older steps may still be summarised, see keepSteps).',
    ),
  keepSteps: Schema.natural()
    .min(1)
    .default(2)
    .description(
      'The newest steps (a reply with its tool results) always kept verbatim; older steps of the kept turns are summarised too.',
    ),
  pruneMinChars: Schema.natural()
    .min(1)
    .default(4000)
    .description(
      'Before summarising, older tool results longer than this are replaced by a short stub naming the tool and the size.',
    ),
  charsPerToken: Schema.number()
    .min(1)
    .default(4)
    .description('Characters per token when the size of messages has to be estimated.'),
  imageTokens: Schema.natural().default(1000).description('Tokens counted for one image when estimating.'),
  ...sideCallFields('summary call', 8192, "the agent's"),
  transcriptBlockChars: Schema.natural()
    .min(100)
    .default(4000)
    .description('Each message part shown to the summariser is cut to this many characters (head and tail kept).'),
  maxOverflowRetries: Schema.natural()
    .default(1)
    .description('Compact-and-retry attempts per step after the provider reports a context overflow; 0 turns it off.'),
  prompt: Schema.string().default(DEFAULT_PROMPT).description('System prompt of the summary call.'),
})
