import type { Todo } from '@dsh/web-client'
import { clsx } from 'clsx'
import { useRemembered } from '../../hooks/useRemembered.ts'
import { Chevron } from '../common/Chevron.tsx'
import styles from './TodoDock.module.css'

const MARK: Record<Todo['status'], string> = { pending: '○', in_progress: '◐', completed: '●' }

/** The model's latest todo list, above the composer; collapsed it shows progress and the current item. */
export function TodoDock({ todos }: { todos: readonly Todo[] }) {
  const [open, setOpen] = useRemembered('todo-dock', true)
  if (todos.length === 0) return null
  const done = todos.filter((t) => t.status === 'completed').length
  const current = todos.find((t) => t.status === 'in_progress')
  return (
    <section className={styles.dock} aria-label="Todo list">
      <button type="button" className={styles.header} aria-expanded={open} onClick={() => setOpen(!open)}>
        <Chevron open={open} />
        <span className={styles.title}>Todos</span>
        <span className={styles.count}>
          {done}/{todos.length} done
        </span>
        {!open && current ? <span className={styles.current}>{current.activeForm ?? current.content}</span> : null}
      </button>
      {open ? (
        <ol className={styles.list}>
          {todos.map((todo, i) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: todo/write replaces the whole list and items carry no id; two may read the same
            <li key={i} className={clsx(styles.item, styles[todo.status])}>
              <span className={styles.mark} aria-hidden="true">
                {MARK[todo.status]}
              </span>
              <span>
                {todo.status === 'in_progress' && todo.activeForm ? todo.activeForm : todo.content}
                <span className="visually-hidden"> ({todo.status.replace('_', ' ')})</span>
              </span>
            </li>
          ))}
        </ol>
      ) : null}
    </section>
  )
}
