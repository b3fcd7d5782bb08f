import { useEffect } from 'react'

/**
 * Sets the performance mark `dsh:session-painted` once a restored session is
 * on screen (after the frame that drew it), for the web benchmark.
 */
export function usePaintedMark(ready: boolean): void {
  useEffect(() => {
    if (!ready) return
    let timer: ReturnType<typeof setTimeout> | undefined
    const frame = requestAnimationFrame(() => {
      timer = setTimeout(() => performance.mark('dsh:session-painted'))
    })
    return () => {
      cancelAnimationFrame(frame)
      clearTimeout(timer)
    }
  }, [ready])
}
