import { type Context, Schema } from '@dsh/cordis'
import { defineTool, oneLine, ToolError, toolParameters } from '@dsh/tools'
import { z } from 'zod'
import { NoAskerError, type Question, type QuestionAnswer, Questions } from './service.ts'

export * from './service.ts'

export interface QuestionsConfig {
  answerTimeoutMs: number
}

export const Config: Schema<QuestionsConfig> = Schema.object({
  answerTimeoutMs: Schema.natural()
    .min(1)
    .default(86_400_000)
    .description('How long an ask_user_question call waits for the user, in milliseconds (default one day).'),
})

export const name = 'questions'
export const inject = ['tools']

const option = z.object({
  label: z.string().trim().min(1).max(80).describe('A short choice, 1 to 5 words.'),
  description: z.string().trim().min(1).optional().describe('What choosing it means, in one sentence.'),
})

const question = z
  .object({
    id: z.string().trim().min(1).max(64).describe('Your stable id for the question; the answer repeats it.'),
    question: z.string().trim().min(1).describe('The complete question, ending with a question mark.'),
    header: z
      .string()
      .trim()
      .min(1)
      .max(30)
      .optional()
      .describe('A very short label for the question, e.g. "Database".'),
    options: z
      .array(option)
      .min(2)
      .max(4)
      .optional()
      .describe(
        '2 to 4 distinct choices; leave out for an open question. Put a recommended one first and add "(Recommended)" to its label.',
      ),
    multi_select: z.boolean().optional().describe('Let the user pick more than one option. Default false.'),
  })
  .superRefine((value, issues) => {
    const labels = (value.options ?? []).map((o) => o.label)
    labels.forEach((label, i) => {
      if (labels.indexOf(label) !== i)
        issues.addIssue({
          code: 'custom',
          path: ['options', i, 'label'],
          message: `the label "${label}" is used twice`,
        })
    })
  })

const parameters = toolParameters(
  z.object({
    questions: z
      .array(question)
      .min(1)
      .max(4)
      .superRefine((list, issues) => {
        const texts = list.map((q) => q.question)
        texts.forEach((text, i) => {
          if (texts.indexOf(text) !== i)
            issues.addIssue({ code: 'custom', path: [i, 'question'], message: 'the same question is asked twice' })
        })
        const ids = list.map((q) => q.id)
        ids.forEach((id, i) => {
          if (ids.indexOf(id) !== i)
            issues.addIssue({ code: 'custom', path: [i, 'id'], message: `the id "${id}" is used twice` })
        })
      })
      .describe('1 to 4 questions.'),
  }),
)

/** Provides `ctx.questions` and registers `ask_user_question`. */
export function apply(ctx: Context, config: QuestionsConfig) {
  ctx.plugin(Questions)

  ctx.tools.register(
    ctx,
    defineTool({
      name: 'ask_user_question',
      presentation: {
        kind: 'other',
        view: 'generic',
        title: (args) => {
          const asked = Array.isArray(args.questions)
            ? args.questions.map((q) => (q as { question?: unknown })?.question)
            : []
          const texts = asked.filter((q): q is string => typeof q === 'string')
          return texts.length ? `Ask the user: ${oneLine(texts.join(' / '))}` : 'Ask the user'
        },
      },
      description:
        'Ask the user 1 to 4 questions when you need a decision or a fact only they have, instead of guessing. ' +
        'Give each question an id (the answer repeats it) and 2 to 4 options, or none for an open question; ' +
        'the user may always answer in their own words. Do not ask what you can find out yourself.',
      parameters,
      readOnly: true,
      timeoutMs: config.answerTimeoutMs,
      access: (args) => ({
        kind: 'read',
        summary: `ask the user: ${args.questions.map((q) => q.question).join(' / ')}`,
      }),
      async execute(args, run) {
        const questions: Question[] = args.questions.map((q) => ({
          id: q.id,
          question: q.question,
          ...(q.header !== undefined ? { header: q.header } : {}),
          options: q.options ?? [],
          ...(q.multi_select !== undefined ? { multiSelect: q.multi_select } : {}),
        }))
        const service = ctx.get('questions')
        if (!service) throw new ToolError('NO_USER', new NoAskerError().message)
        let answers: QuestionAnswer[]
        try {
          answers = await service.ask({ sessionId: run.sessionId, callId: run.callId, questions }, run.signal)
        } catch (error) {
          if (error instanceof NoAskerError) throw new ToolError('NO_USER', error.message)
          if (run.signal.aborted) throw error
          throw new ToolError(
            'QUESTION_FAILED',
            `asking the user failed: ${error instanceof Error ? error.message : String(error)}`,
          )
        }
        return { content: renderAnswers(questions, answers), meta: { answers: answers.map((a) => ({ ...a })) } }
      },
    }),
  )
}

function renderAnswers(questions: readonly Question[], answers: readonly QuestionAnswer[]): string {
  const lines = ['The user answered:']
  questions.forEach((q, i) => {
    const answer = answers.find((a) => a.question === q.question) ?? answers[i]
    lines.push(`${i + 1}. [${q.id ?? i + 1}] ${q.question}`)
    if (answer?.selected.length) lines.push(`   Selected: ${answer.selected.join(', ')}`)
    if (answer?.text?.trim()) lines.push(`   Wrote: ${JSON.stringify(answer.text.trim())}`)
    if (!answer?.selected.length && !answer?.text?.trim()) lines.push('   (no answer)')
  })
  return lines.join('\n')
}
