import { useEffect } from 'react'
import { afterNextPaint } from '../lib/after-paint.ts'

/**
 * Sets the performance mark `dsh:session-painted` once a restored session is
 * on screen (right after the frame that drew it), for the web benchmark, then
 * runs `then`: work that waits for the first paint.
 */
export function useFirstPaint(ready: boolean, then: () => void): void {
  useEffect(() => {
    if (!ready) return
    const stop = new AbortController()
    afterNextPaint(() => {
      performance.mark('dsh:session-painted')
      then()
    }, stop.signal)
    return () => stop.abort()
  }, [ready])
}
