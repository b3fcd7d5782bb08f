import { type Context, ExclusiveSlot, Service } from '@dsh/cordis'
import { untilAborted } from '@dsh/tools'
import type { Question, QuestionAnswer } from '@dsh/wire-types'

export type { Question, QuestionAnswer, QuestionOption } from '@dsh/wire-types'

declare module '@dsh/cordis' {
  interface Context {
    questions: Questions
  }
}

export interface QuestionRequest {
  sessionId: string
  callId: string
  questions: Question[]
}

/** Puts questions to a user (a surface: browser dialog, SDK client, terminal). One at a time. */
export type Asker = (request: QuestionRequest, signal: AbortSignal) => Promise<QuestionAnswer[]>

export const NO_ASKER = 'no user is available to answer questions in this run; proceed with your best judgement'

/** Thrown by `ask` when no surface can put the questions to a user. */
export class NoAskerError extends Error {
  override name = 'NoAskerError'

  constructor() {
    super(NO_ASKER)
  }
}

/**
 * `ctx.questions`: the one place questions for the user go. A surface sets
 * the asker; the `ask_user_question` tool (and anything else) asks through it.
 */
export class Questions extends Service {
  private readonly asker = new ExclusiveSlot<Asker>('question asker')

  constructor(ctx: Context) {
    super(ctx, 'questions')
  }

  /** Installs the one asker, until its plugin is disposed or the disposer is called. A second one throws. */
  setAsker(ctx: Context, asker: Asker): () => void {
    return this.asker.set(ctx, asker)
  }

  /** Whether a user can be asked right now. */
  available(): boolean {
    return this.asker.current !== undefined
  }

  /**
   * Asks and waits for the answers. Rejects with `NoAskerError` when no asker
   * is set, with the signal's reason when it aborts, and with an error naming
   * the problem when the asker's answer is malformed.
   */
  async ask(request: QuestionRequest, signal: AbortSignal): Promise<QuestionAnswer[]> {
    const asker = this.asker.current
    if (!asker) throw new NoAskerError()
    const answers = await untilAborted(asker(request, signal), signal)
    return checkAnswers(answers)
  }
}

function checkAnswers(value: unknown): QuestionAnswer[] {
  if (!Array.isArray(value)) throw new Error(`the asker answered ${describe(value)}, not a list of answers`)
  return value.map((answer, index) => {
    const where = `answer ${index + 1}`
    if (answer === null || typeof answer !== 'object') throw new Error(`${where} is ${describe(answer)}, not an object`)
    const { question, selected, text } = answer as Record<string, unknown>
    if (typeof question !== 'string') throw new Error(`${where} has no question text`)
    if (!Array.isArray(selected) || !selected.every((label) => typeof label === 'string'))
      throw new Error(`${where}: selected must be a list of option labels`)
    if (text !== undefined && typeof text !== 'string') throw new Error(`${where}: text must be a string`)
    return { question, selected: [...selected], ...(typeof text === 'string' ? { text } : {}) }
  })
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing'
  const json = JSON.stringify(value)
  return json === undefined ? String(value) : json.length > 80 ? `${json.slice(0, 80)}…` : json
}
