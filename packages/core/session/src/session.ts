import type { Message } from '@dsh/llm'
import type {
  AnySessionEvent,
  SessionEvent,
  SessionEventMap,
  SessionEventType,
  SessionMeta,
  SurfaceEventType,
} from './events.ts'
import { SURFACE_TYPES } from './events.ts'
import { adoptFrozenJson, frozenJsonCopy, type TextMap } from './json.ts'

/**
 * Asked once per event entering a session (an append, or each seed event):
 * the rewrite of the event's string values, or undefined for none. How
 * `ctx.sessions.registerTextFilter` redacts secrets before they are logged.
 */
export type TextFilter = () => TextMap | undefined

export interface AppendOptions {
  /** Surface events only: earlier surface seqs this event replaces in the model's history. */
  replaces?: number[]
  ignorable?: true
}

const surfaceTypes = new Set<string>(SURFACE_TYPES)

export function isSurfaceEvent(event: SessionEvent): event is SessionEvent<SurfaceEventType> {
  return surfaceTypes.has(event.type)
}

/** The model-visible message a surface event contributes, if any. */
export function messageOf(event: SessionEvent): Message | undefined {
  if (!isSurfaceEvent(event)) return undefined
  const { message } = event.data as { message: Message }
  if (message.content.length === 0) return undefined
  return message
}

/** Where the log stands: the last turn number, whether it is still open, and the step inside it. */
export interface TurnState {
  turn: number
  open: boolean
  step: number
  stepOpen: boolean
}

/**
 * An append-only, typed event log. Seqs are contiguous from 0; events are
 * deep-frozen lossless JSON. The surface (the seqs whose messages form the
 * model's history) follows appends and replacements; `deriveMessages()`
 * projects it.
 */
export class Session {
  readonly meta: SessionMeta
  /** Events that existed before this run (resume or fork); they are already stored. */
  readonly seedLength: number
  private readonly log: SessionEvent[] = []
  private surfaceSeqs: number[] = []
  private cached: Message[] | undefined
  private publishing = false
  private readonly publish: (event: SessionEvent) => void
  private readonly filter: TextFilter | undefined

  /**
   * `adoptSeed`: the seed's objects are handed over, so they are frozen in place rather than copied (see `adoptFrozenJson`).
   * `filter`: rewrites the strings of every event that enters, seed included (see `TextFilter`).
   */
  constructor(
    meta: SessionMeta,
    seed: readonly SessionEvent[],
    publish: (event: SessionEvent) => void,
    adoptSeed = false,
    filter?: TextFilter,
  ) {
    this.meta = Object.freeze({ ...meta })
    this.publish = publish
    this.filter = filter
    const freeze = adoptSeed ? adoptFrozenJson : frozenJsonCopy
    const text = seed.length ? filter?.() : undefined
    for (const event of seed) this.admit(freeze(event, `event ${event.seq}`, text))
    this.seedLength = this.log.length
  }

  get id() {
    return this.meta.id
  }

  get events(): readonly SessionEvent[] {
    return this.log
  }

  /** The seq the next event gets. */
  get nextSeq(): number {
    const last = this.log.at(-1)
    return last ? last.seq + 1 : 0
  }

  append<K extends SessionEventType>(type: K, data: SessionEventMap[K], options: AppendOptions = {}): SessionEvent<K> {
    if (this.publishing) throw new Error(`session ${this.id}: cannot append ${type} while an event is being published`)
    const draft: SessionEvent = {
      seq: this.nextSeq,
      time: Date.now(),
      type,
      data: data as SessionEventMap[SessionEventType],
    }
    if (options.ignorable) draft.ignorable = true
    if (options.replaces) {
      if (!surfaceTypes.has(type))
        throw new Error(`session ${this.id}: only surface events can replace others, not ${type}`)
      draft.replaces = options.replaces
    }
    const event = frozenJsonCopy(draft, type, this.filter?.())
    this.admit(event)
    this.publishing = true
    try {
      this.publish(event)
    } finally {
      this.publishing = false
    }
    return event as SessionEvent<K>
  }

  private admit(event: SessionEvent): void {
    if (this.log.length && event.seq <= (this.log.at(-1) as SessionEvent).seq) {
      throw new Error(`session ${this.id}: event seq ${event.seq} does not follow ${this.log.at(-1)?.seq}`)
    }
    if (event.replaces) {
      const positions = event.replaces.map((seq) => this.surfaceSeqs.indexOf(seq))
      if (event.replaces.length === 0 || positions.some((p) => p < 0)) {
        throw new Error(
          `session ${this.id}: event ${event.seq} replaces seqs that are not in the history: ${event.replaces.join(', ')}`,
        )
      }
      const first = Math.min(...positions)
      const gone = new Set(event.replaces)
      const kept = this.surfaceSeqs.filter((seq) => !gone.has(seq))
      kept.splice(first, 0, event.seq)
      this.surfaceSeqs = kept
    } else if (surfaceTypes.has(event.type)) {
      this.surfaceSeqs.push(event.seq)
    }
    if (surfaceTypes.has(event.type)) this.cached = undefined
    this.log.push(event)
  }

  private bySeq(seq: number): SessionEvent | undefined {
    // Seqs are contiguous except where a corrupt stored line was skipped, so start at the likely index.
    const guess = this.log[Math.min(seq, this.log.length - 1)]
    if (guess?.seq === seq) return guess
    return this.log.find((e) => e.seq === seq)
  }

  /** The seqs of the events whose messages form the model's history, in order. */
  surface(): readonly number[] {
    return this.surfaceSeqs
  }

  /** The model's history: one message per surface event (empty assistant replies left out). */
  deriveMessages(): Message[] {
    if (!this.cached) {
      const out: Message[] = []
      for (const seq of this.surfaceSeqs) {
        const event = this.bySeq(seq)
        const message = event && messageOf(event)
        if (message) out.push(message)
      }
      this.cached = out
    }
    return [...this.cached]
  }

  turnState(): TurnState {
    const state: TurnState = { turn: 0, open: false, step: 0, stepOpen: false }
    for (const event of this.log as AnySessionEvent[]) {
      switch (event.type) {
        case 'turn/start':
          Object.assign(state, { turn: event.data.turn, open: true, step: 0, stepOpen: false })
          break
        case 'turn/end':
          Object.assign(state, { open: false, stepOpen: false })
          break
        case 'step/start':
          Object.assign(state, { step: event.data.step, stepOpen: true })
          break
        case 'step/end':
          state.stepOpen = false
          break
        default:
          break
      }
    }
    return state
  }

  /** The last event of the given type, if any. */
  last<K extends SessionEventType>(type: K): SessionEvent<K> | undefined {
    for (let i = this.log.length - 1; i >= 0; i--) {
      const event = this.log[i] as SessionEvent
      if (event.type === type) return event as SessionEvent<K>
    }
    return undefined
  }
}
