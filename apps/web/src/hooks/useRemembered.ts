import { createContext, useCallback, useContext, useState } from 'react'

/** Per-session memory of UI state (expanded cards), kept while rows scroll out of the virtual list. */
export const MemoryContext = createContext<Map<string, unknown>>(new Map())

export function useRemembered<T>(key: string, initial: T): [T, (value: T) => void] {
  const memory = useContext(MemoryContext)
  const [value, setValue] = useState<T>(() => (memory.has(key) ? (memory.get(key) as T) : initial))
  const set = useCallback(
    (next: T) => {
      memory.set(key, next)
      setValue(next)
    },
    [key, memory],
  )
  return [value, set]
}
