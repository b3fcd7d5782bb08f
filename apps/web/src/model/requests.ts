import type {
  ApprovalDecision,
  ApprovalRequest,
  DshApi,
  LiveConnection,
  QuestionAnswer,
  QuestionRequest,
  RequestId,
} from '@dsh/web-client'
import { Store } from '../lib/store.ts'

export type PendingRequest = ApprovalRequest | QuestionRequest

/** Approvals and questions waiting for the user, in arrival order. */
export class RequestsStore extends Store<readonly PendingRequest[]> {
  constructor(
    private readonly api: DshApi,
    live: LiveConnection,
  ) {
    super([])
    live.onFrame((frame) => {
      if (frame.type === 'approval' || frame.type === 'question') {
        this.set((list) => (list.some((r) => r.requestId === frame.requestId) ? list : [...list, frame]))
      } else if (frame.type === 'approval-resolved' || frame.type === 'question-resolved') {
        this.remove(frame.requestId)
      }
    })
  }

  async approve(requestId: RequestId, decision: ApprovalDecision, message?: string): Promise<void> {
    await this.api.answerApproval(requestId, decision, message)
    this.remove(requestId)
  }

  async answer(requestId: RequestId, answers: QuestionAnswer[]): Promise<void> {
    await this.api.answerQuestion(requestId, answers)
    this.remove(requestId)
  }

  /** Forgets every pending request (the page stopped following their sessions; a new subscribe re-sends those still open). */
  clear(): void {
    this.set([])
  }

  private remove(requestId: RequestId): void {
    this.set((list) =>
      list.some((r) => r.requestId === requestId) ? list.filter((r) => r.requestId !== requestId) : list,
    )
  }
}
