import { ApiError } from '@dsh/web-client'
import { Store } from '../lib/store.ts'

export interface Toast {
  id: number
  tone: 'info' | 'error'
  text: string
}

const LIFETIME_MS = 8000

/** Short messages at the corner of the screen: API failures and command results. */
export class Toasts extends Store<readonly Toast[]> {
  private next = 1

  constructor() {
    super([])
  }

  show(tone: Toast['tone'], text: string): void {
    const id = this.next++
    this.set((list) => [...list.slice(-3), { id, tone, text }])
    setTimeout(() => this.dismiss(id), LIFETIME_MS)
  }

  error(error: unknown, doing?: string): void {
    const text =
      error instanceof ApiError
        ? `${error.message} (${error.code})`
        : error instanceof Error
          ? error.message
          : String(error)
    this.show('error', doing ? `${doing}: ${text}` : text)
  }

  dismiss(id: number): void {
    this.set((list) => list.filter((t) => t.id !== id))
  }
}
