import { useEffect, useEffectEvent } from 'react'
import { afterNextPaint } from '../lib/after-paint.ts'

/**
 * Sets the performance mark `dsh:session-painted` once a restored session is
 * on screen (right after the frame that drew it), for the web benchmark, then
 * runs `then`: work that waits for the first paint.
 */
export function useFirstPaint(ready: boolean, then: () => void): void {
  const painted = useEffectEvent(() => {
    performance.mark('dsh:session-painted')
    then()
  })
  useEffect(() => {
    if (!ready) return
    const stop = new AbortController()
    afterNextPaint(painted, stop.signal)
    return () => stop.abort()
  }, [ready])
}
