export interface QuestionOption {
  label: string
  description?: string
}

/** A question put to the user (`ask_user_question`), with the options to pick from. */
export interface Question {
  /** The model's stable id for the question, echoed with the answer. */
  id?: string
  question: string
  /** A short heading, e.g. "Database". */
  header?: string
  /** The choices; empty for a question the user answers in their own words. */
  options: QuestionOption[]
  multiSelect?: boolean
}

/** The user's answer to one question: the labels they picked, and what they typed instead or besides. */
export interface QuestionAnswer {
  question: string
  selected: string[]
  text?: string
}
