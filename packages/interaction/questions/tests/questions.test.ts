import { type Context as Ctx, Context } from '@dsh/cordis'
import type { ToolCallId } from '@dsh/llm'
import { textOf, type ToolResult, ToolRuntime } from '@dsh/tools'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import * as questions from '../src/index.ts'
import { type Asker, NO_ASKER, NoAskerError, type QuestionRequest, type QuestionsConfig } from '../src/index.ts'

let root: Context

beforeEach(async () => {
  root = new Context()
  await root.plugin(ToolRuntime, {} as never)
  await root.plugin(questions, {} as QuestionsConfig)
})

afterEach(async () => {
  await root.fiber.dispose()
})

/** Mounts a stand-in surface that answers with `asker`; returns its fiber. */
async function surface(asker: Asker) {
  const fiber = root.plugin({
    name: 'test-surface',
    inject: ['questions'],
    apply(ctx: Ctx) {
      ctx.questions.setAsker(ctx, asker)
    },
  })
  await fiber
  return fiber
}

const database = {
  id: 'db',
  question: 'Which database should the service use?',
  header: 'Database',
  options: [
    { label: 'Postgres (Recommended)', description: 'Already runs in production.' },
    { label: 'SQLite', description: 'No server to run.' },
  ],
}

const features = {
  id: 'features',
  question: 'Which features go into the first release?',
  options: [{ label: 'Search' }, { label: 'Export' }, { label: 'Sharing' }],
  multi_select: true,
}

/** What the surfaces see of `features`: the wire type spells the flag multiSelect. */
const { multi_select: _, ...featuresBase } = features
const featuresOnTheWire = { ...featuresBase, multiSelect: true }

let calls = 0
function ask(args: unknown, signal = new AbortController().signal): Promise<ToolResult> {
  return root.tools.execute(
    { callId: `call-${++calls}` as ToolCallId, name: 'ask_user_question', arguments: JSON.stringify(args) },
    { signal, cwd: '/work', sessionId: 'session-1', sessionState: new Map() },
  )
}

describe('ask_user_question', () => {
  it('without an asker (headless) returns an error the model can act on', async () => {
    const result = await ask({ questions: [database] })
    expect(result.isError).toBe(true)
    expect(result.error?.code).toBe('NO_USER')
    expect(textOf(result.content)).toBe(`Error: ${NO_ASKER}`)
    expect(NO_ASKER).toBe('no user is available to answer questions in this run; proceed with your best judgement')
  })

  it('hands the questions to the asker and gives the model the answers, picked and typed', async () => {
    const seen: QuestionRequest[] = []
    await surface(async (request) => {
      seen.push(request)
      return [
        { question: database.question, selected: [], text: 'Use the existing MySQL server' },
        { question: features.question, selected: ['Search', 'Export'], text: 'Sharing can wait' },
      ]
    })
    const result = await ask({ questions: [database, features] })
    expect(result.isError).toBe(false)
    expect(seen).toEqual([
      { sessionId: 'session-1', callId: `call-${calls}`, questions: [database, featuresOnTheWire] },
    ])
    expect(textOf(result.content)).toBe(
      [
        'The user answered:',
        '1. [db] Which database should the service use?',
        '   Wrote: "Use the existing MySQL server"',
        '2. [features] Which features go into the first release?',
        '   Selected: Search, Export',
        '   Wrote: "Sharing can wait"',
      ].join('\n'),
    )
    expect(result.meta).toEqual({
      answers: [
        { question: database.question, selected: [], text: 'Use the existing MySQL server' },
        { question: features.question, selected: ['Search', 'Export'], text: 'Sharing can wait' },
      ],
    })
  })

  it('passes an open question (no options) with an empty list of choices and echoes its id', async () => {
    const seen: QuestionRequest[] = []
    await surface(async (request) => {
      seen.push(request)
      return [{ question: 'What should the service be called?', selected: [], text: 'ledger' }]
    })
    const open = { id: 'name', question: 'What should the service be called?' }
    const result = await ask({ questions: [open] })
    expect(seen[0]?.questions).toEqual([{ ...open, options: [] }])
    expect(textOf(result.content)).toBe(
      ['The user answered:', '1. [name] What should the service be called?', '   Wrote: "ledger"'].join('\n'),
    )
  })

  it('aborts the pending question when the turn is cancelled', async () => {
    let reached!: () => void
    const asked = new Promise<void>((resolve) => (reached = resolve))
    let askerSignal: AbortSignal | undefined
    await surface(
      (_request, signal) =>
        new Promise((_resolve, reject) => {
          askerSignal = signal
          signal.addEventListener('abort', () => reject(signal.reason), { once: true })
          reached()
        }),
    )
    const controller = new AbortController()
    const pending = ask({ questions: [database] }, controller.signal)
    await asked
    controller.abort('user')
    const result = await pending
    expect(result.error?.code).toBe('CANCELLED')
    expect(askerSignal?.aborted).toBe(true)
  })

  it('reports a malformed answer from the asker', async () => {
    await surface(async () => [{ question: database.question, selected: 'Postgres' }] as never)
    const result = await ask({ questions: [database] })
    expect(result.error?.code).toBe('QUESTION_FAILED')
    expect(textOf(result.content)).toBe(
      'Error: asking the user failed: answer 1: selected must be a list of option labels',
    )
  })

  it('refuses malformed questions before asking anyone', async () => {
    let asked = 0
    await surface(async () => {
      asked++
      return []
    })
    const one = { ...database, options: [database.options[0]] }
    const five = { ...database, options: [...features.options, { label: 'D' }, { label: 'E' }] }
    const twice = { ...database, options: [{ label: 'Same' }, { label: 'Same' }] }
    for (const bad of [
      { questions: [] },
      { questions: [one] },
      { questions: [five] },
      { questions: [twice] },
      { questions: [database, database] },
      { questions: Array(5).fill(features) },
      { questions: [{ question: database.question, options: database.options }] },
      { questions: [database, { ...features, id: 'db' }] },
    ]) {
      const result = await ask(bad)
      expect(result.error?.code).toBe('INVALID_ARGUMENTS')
    }
    expect(textOf((await ask({ questions: [twice] })).content)).toContain(
      'questions[0].options[1].label: the label "Same" is used twice',
    )
    expect(asked).toBe(0)
  })
})

describe('ctx.questions', () => {
  it('holds one asker at a time; disposing its plugin frees the slot', async () => {
    const first = await surface(async () => [])
    expect(root.questions.available()).toBe(true)
    expect(() => root.questions.setAsker(root, async () => [])).toThrow('a question asker is already set')
    await first.dispose()
    expect(root.questions.available()).toBe(false)
    await expect(
      root.questions.ask({ sessionId: 's', callId: 'c', questions: [database] }, new AbortController().signal),
    ).rejects.toBeInstanceOf(NoAskerError)
    const off = root.questions.setAsker(root, async () => [{ question: database.question, selected: ['SQLite'] }])
    expect(
      await root.questions.ask({ sessionId: 's', callId: 'c', questions: [database] }, new AbortController().signal),
    ).toEqual([{ question: database.question, selected: ['SQLite'] }])
    off()
    expect(root.questions.available()).toBe(false)
  })

  it('goes away with the plugin, and the tool with it', async () => {
    await root.fiber.dispose()
    root = new Context()
    await root.plugin(ToolRuntime, {} as never)
    const fiber = root.plugin(questions, {} as QuestionsConfig)
    await fiber
    expect(root.get('questions')).toBeDefined()
    expect(root.tools.get('ask_user_question')).toBeDefined()
    await fiber.dispose()
    expect(root.get('questions')).toBeUndefined()
    expect(root.tools.get('ask_user_question')).toBeUndefined()
  })
})
