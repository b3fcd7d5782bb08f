import { createContext, useContext } from 'react'
import type { AppModel } from '../model/app.ts'

export const AppContext = createContext<AppModel | undefined>(undefined)

export function useApp(): AppModel {
  const app = useContext(AppContext)
  if (!app) throw new Error('useApp needs <AppContext.Provider>')
  return app
}
