interface PrioritizedScheduler {
  postTask(task: () => void, options: { priority: 'user-blocking'; signal?: AbortSignal }): Promise<void>
}

/**
 * Runs `task` once the next frame has been painted: a frame callback runs
 * before that frame paints, and the task it posts runs after. The task is a
 * user-blocking one where the browser has `scheduler.postTask` (Chromium); a
 * plain timer would wait behind whatever else is queued while the page loads
 * (network responses, the socket handshake), long after the paint.
 */
export function afterNextPaint(task: () => void, signal: AbortSignal): void {
  const frame = requestAnimationFrame(() => {
    const scheduler = (globalThis as { scheduler?: PrioritizedScheduler }).scheduler
    if (scheduler) {
      scheduler.postTask(task, { priority: 'user-blocking', signal }).catch(() => {})
      return
    }
    const timer = setTimeout(task)
    signal.addEventListener('abort', () => clearTimeout(timer))
  })
  signal.addEventListener('abort', () => cancelAnimationFrame(frame))
}
