import type { QuestionAnswer, QuestionRequest } from '@dsh/web-client'
import { type KeyboardEvent, useState } from 'react'
import { Button } from '../common/Button.tsx'
import { ErrorText } from '../common/ErrorText.tsx'
import { Kbd } from '../common/Kbd.tsx'
import { Dialog } from './Dialog.tsx'
import styles from './QuestionDialog.module.css'

export interface QuestionDialogProps {
  request: QuestionRequest
  onAnswer: (answers: QuestionAnswer[]) => Promise<void>
}

interface Draft {
  selected: string[]
  text: string
}

/**
 * The model's questions, each with its options and a free-form answer.
 * Number keys pick options of a single question, Enter sends, Esc declines.
 */
export function QuestionDialog({ request, onAnswer }: QuestionDialogProps) {
  const { questions } = request
  const [drafts, setDrafts] = useState<Draft[]>(() => questions.map(() => ({ selected: [], text: '' })))
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string>()

  const toggle = (q: number, label: string) => {
    setDrafts((all) =>
      all.map((draft, i) => {
        if (i !== q) return draft
        const multi = questions[q]?.multiSelect
        const has = draft.selected.includes(label)
        const selected = multi
          ? has
            ? draft.selected.filter((s) => s !== label)
            : [...draft.selected, label]
          : [label]
        return { ...draft, selected }
      }),
    )
  }

  const send = async (decline = false) => {
    if (busy) return
    setBusy(true)
    setError(undefined)
    const answers: QuestionAnswer[] = questions.map((q, i) => {
      const draft = drafts[i] as Draft
      if (decline) return { question: q.question, selected: [], text: 'The user declined to answer.' }
      return {
        question: q.question,
        selected: draft.selected,
        ...(draft.text.trim() ? { text: draft.text.trim() } : {}),
      }
    })
    try {
      await onAnswer(answers)
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e))
      setBusy(false)
    }
  }

  const onKey = (event: KeyboardEvent<HTMLDialogElement>) => {
    const target = event.target as HTMLElement
    const typing = target.tagName === 'INPUT' && (target as HTMLInputElement).type === 'text'
    if (event.key === 'Enter' && !event.shiftKey && target.tagName !== 'BUTTON') {
      void send()
      return true
    }
    const digit = Number(event.key)
    const options = questions[0]?.options ?? []
    if (!typing && questions.length === 1 && digit >= 1 && digit <= options.length) {
      toggle(0, (options[digit - 1] as { label: string }).label)
      return true
    }
    return false
  }

  return (
    <Dialog
      title={questions.length === 1 ? 'A question from the model' : `${questions.length} questions from the model`}
      wide
      onEscape={() => void send(true)}
      onKey={onKey}
    >
      {questions.map((question, q) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: a request's questions are fixed and carry no id; the answers are kept by this index too
        <fieldset key={q} className={styles.question}>
          <legend className={styles.legend}>
            {question.header ? <span className={styles.header}>{question.header}</span> : null}
            {question.question}
          </legend>
          <div className={styles.options}>
            {question.options.map((option, o) => (
              <label key={option.label} className={styles.option}>
                <input
                  type={question.multiSelect ? 'checkbox' : 'radio'}
                  name={`q${q}`}
                  checked={drafts[q]?.selected.includes(option.label) ?? false}
                  onChange={() => toggle(q, option.label)}
                  data-autofocus={q === 0 && o === 0 ? true : undefined}
                />
                <span>
                  {questions.length === 1 && o < 9 ? <Kbd>{String(o + 1)}</Kbd> : null} <strong>{option.label}</strong>
                  {option.description ? <span className={styles.description}>{option.description}</span> : null}
                </span>
              </label>
            ))}
          </div>
          <input
            type="text"
            className={styles.text}
            aria-label={`Your own answer to: ${question.question}`}
            placeholder="Or write your own answer"
            value={drafts[q]?.text ?? ''}
            onChange={(e) => setDrafts((all) => all.map((d, i) => (i === q ? { ...d, text: e.target.value } : d)))}
          />
        </fieldset>
      ))}
      <ErrorText error={error} />
      <div className={styles.actions}>
        <Button variant="primary" disabled={busy} onClick={() => void send()}>
          Answer <Kbd>Enter</Kbd>
        </Button>
        <Button variant="ghost" disabled={busy} onClick={() => void send(true)}>
          Decline <Kbd>Esc</Kbd>
        </Button>
      </div>
    </Dialog>
  )
}
