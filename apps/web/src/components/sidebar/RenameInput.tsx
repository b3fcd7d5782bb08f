import { useEffect, useRef, useState } from 'react'
import styles from './RenameInput.module.css'

/** An inline title editor: Enter saves, Escape cancels (reports the initial value). */
export function RenameInput({ initial, onDone }: { initial: string; onDone: (value: string) => void }) {
  const [value, setValue] = useState(initial)
  const ref = useRef<HTMLInputElement>(null)
  const done = useRef(false)
  const finish = (result: string) => {
    if (done.current) return
    done.current = true
    onDone(result)
  }
  useEffect(() => {
    ref.current?.focus()
    ref.current?.select()
  }, [])
  return (
    <input
      ref={ref}
      className={styles.input}
      aria-label="Session title"
      value={value}
      onChange={(e) => setValue(e.target.value)}
      onKeyDown={(e) => {
        if (e.key === 'Enter') finish(value.trim())
        if (e.key === 'Escape') finish(initial)
      }}
      onBlur={() => finish(value.trim())}
    />
  )
}
