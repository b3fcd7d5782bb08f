import { clsx } from 'clsx'
import {
  type ClipboardEvent,
  type DragEvent,
  type KeyboardEvent,
  type ReactNode,
  useId,
  useLayoutEffect,
  useRef,
  useState,
} from 'react'
import { parseCommand, type ParsedCommand } from '../../lib/commands.ts'
import { type PendingImage, readImages } from '../../lib/images.ts'
import { insertMention, type Trigger, triggerAt } from '../../lib/triggers.ts'
import { Icon } from '../common/Icon.tsx'
import { ErrorText } from '../common/ErrorText.tsx'
import { Kbd } from '../common/Kbd.tsx'
import { AttachmentRail } from './AttachmentRail.tsx'
import styles from './Composer.module.css'
import { Suggestions } from './Suggestions.tsx'
import { type Suggestion, useSuggestions } from './useSuggestions.ts'

export interface ComposerProps {
  /** Sends a prompt; resolves once the server accepted it. */
  onSend: (text: string, images: PendingImage[]) => Promise<void>
  /** While a turn runs, Enter steers it with the message (default: `onSend`). */
  onSteer?: (text: string, images: PendingImage[]) => Promise<void>
  /** While a turn runs, Alt+Enter (or the queue button) queues the message for after it (default: `onSend`). */
  onQueue?: (text: string, images: PendingImage[]) => Promise<void>
  onCommand: (command: ParsedCommand) => Promise<void>
  onStop?: () => void
  running?: boolean
  disabled?: boolean
  cwd?: string
  placeholder?: string
  /** Shown left of the send button (workspace chip, model). */
  toolbar?: ReactNode
}

const MAX_HEIGHT_PX = 280

/**
 * The message box. Enter sends and Shift+Enter breaks the line; `/` opens
 * the commands, `@` the workspace's files; images can be pasted or dropped.
 * While a turn runs, Enter steers it, Alt+Enter queues a follow-up, and Stop
 * cancels the turn.
 */
export function Composer({
  onSend,
  onSteer,
  onQueue,
  onCommand,
  onStop,
  running,
  disabled,
  cwd,
  placeholder,
  toolbar,
}: ComposerProps) {
  const [text, setText] = useState('')
  const [images, setImages] = useState<PendingImage[]>([])
  const [caret, setCaret] = useState(0)
  const [active, setActive] = useState(0)
  const [dismissed, setDismissed] = useState<string>()
  const [sending, setSending] = useState(false)
  const [dragging, setDragging] = useState(false)
  const [error, setError] = useState<string>()
  const ref = useRef<HTMLTextAreaElement>(null)
  const fileInput = useRef<HTMLInputElement>(null)
  const listId = useId()

  const rawTrigger = triggerAt(text, caret)
  const trigger: Trigger | undefined = rawTrigger && dismissed !== `${text}@${caret}` ? rawTrigger : undefined
  const suggestions = useSuggestions(trigger, cwd)
  const open = suggestions.length > 0
  const activeIndex = Math.min(active, Math.max(0, suggestions.length - 1))

  // biome-ignore lint/correctness/useExhaustiveDependencies: the textarea grows with its text, which the effect measures in the DOM
  useLayoutEffect(() => {
    const el = ref.current
    if (!el) return
    el.style.height = 'auto'
    el.style.height = `${Math.min(el.scrollHeight, MAX_HEIGHT_PX)}px`
  }, [text])

  const setValue = (value: string, nextCaret: number) => {
    setText(value)
    setCaret(nextCaret)
    setActive(0)
    requestAnimationFrame(() => ref.current?.setSelectionRange(nextCaret, nextCaret))
  }

  const pick = (item: Suggestion) => {
    if (!trigger) return
    if (trigger.kind === 'command') setValue(`/${item.value} `, item.value.length + 2)
    else if (trigger.kind === 'model') setValue(`/model ${item.value}`, `/model ${item.value}`.length)
    else setValue(insertMention(text, trigger, item.value).text, insertMention(text, trigger, item.value).caret)
  }

  const submit = async (mode: 'send' | 'queue' = 'send') => {
    const value = text.trim()
    if ((!value && images.length === 0) || sending || disabled) return
    setError(undefined)
    setSending(true)
    try {
      const command = images.length === 0 ? parseCommand(value) : undefined
      if (command) await onCommand(command)
      else if (running && mode === 'queue') await (onQueue ?? onSend)(value, images)
      else if (running) await (onSteer ?? onSend)(value, images)
      else await onSend(value, images)
      setText('')
      setImages([])
      setCaret(0)
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e))
    } finally {
      setSending(false)
      ref.current?.focus()
    }
  }

  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>) => {
    if (event.nativeEvent.isComposing) return
    if (open) {
      if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
        event.preventDefault()
        const step = event.key === 'ArrowDown' ? 1 : -1
        setActive((activeIndex + step + suggestions.length) % suggestions.length)
        return
      }
      // Enter on a command typed in full runs it; otherwise Enter (or Tab) completes the highlighted suggestion.
      const typedInFull = trigger?.kind === 'command' && suggestions[activeIndex]?.value === trigger.query
      if (
        event.key === 'Tab' ||
        (event.key === 'Enter' && !event.shiftKey && trigger?.kind !== 'model' && !typedInFull)
      ) {
        event.preventDefault()
        pick(suggestions[activeIndex] as Suggestion)
        return
      }
      if (event.key === 'Escape') {
        event.preventDefault()
        setDismissed(`${text}@${caret}`)
        return
      }
    }
    if (event.key === 'Enter' && !event.shiftKey) {
      event.preventDefault()
      void submit(event.altKey ? 'queue' : 'send')
    }
  }

  const addFiles = async (files: FileList | File[]) => {
    try {
      const added = await readImages(files)
      if (added.length) setImages((list) => [...list, ...added])
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e))
    }
  }

  const onPaste = (event: ClipboardEvent<HTMLTextAreaElement>) => {
    const files = [...event.clipboardData.files].filter((f) => f.type.startsWith('image/'))
    if (files.length === 0) return
    event.preventDefault()
    void addFiles(files)
  }

  const onDrop = (event: DragEvent<HTMLDivElement>) => {
    setDragging(false)
    if (event.dataTransfer.files.length === 0) return
    event.preventDefault()
    void addFiles(event.dataTransfer.files)
  }

  const empty = !text.trim() && images.length === 0
  return (
    // biome-ignore lint/a11y/noStaticElementInteractions lint/a11y/noNoninteractiveElementInteractions: dropping files is a mouse shortcut for the Attach button, which keyboards use
    <div
      className={clsx(styles.composer, dragging && styles.dragging)}
      onDragOver={(e) => {
        if (e.dataTransfer.types.includes('Files')) {
          e.preventDefault()
          setDragging(true)
        }
      }}
      onDragLeave={() => setDragging(false)}
      onDrop={onDrop}
    >
      {open ? (
        <Suggestions
          id={listId}
          items={suggestions}
          active={activeIndex}
          label={trigger?.kind === 'mention' ? 'Files' : trigger?.kind === 'model' ? 'Models' : 'Commands'}
          onPick={pick}
        />
      ) : null}
      <AttachmentRail images={images} onRemove={(id) => setImages((list) => list.filter((i) => i.id !== id))} />
      <textarea
        ref={ref}
        className={styles.input}
        value={text}
        rows={1}
        placeholder={
          placeholder ??
          (running
            ? 'Steer the running turn, or queue a follow-up…'
            : 'Ask dsh to do something… (/ for commands, @ for files)')
        }
        aria-label="Message"
        role="combobox"
        aria-autocomplete="list"
        aria-expanded={open}
        aria-controls={open ? listId : undefined}
        aria-activedescendant={open ? `${listId}-${activeIndex}` : undefined}
        disabled={disabled}
        onChange={(e) => {
          setText(e.target.value)
          setCaret(e.target.selectionStart)
          setActive(0)
        }}
        onSelect={(e) => setCaret(e.currentTarget.selectionStart)}
        onKeyDown={onKeyDown}
        onPaste={onPaste}
      />
      <ErrorText error={error} />
      <div className={styles.toolbar}>
        <button
          type="button"
          className={styles.iconButton}
          aria-label="Attach images"
          onClick={() => fileInput.current?.click()}
          disabled={disabled}
        >
          <Icon name="image" />
        </button>
        <input
          ref={fileInput}
          type="file"
          accept="image/png,image/jpeg,image/gif,image/webp"
          multiple
          hidden
          onChange={(e) => {
            if (e.target.files) void addFiles([...e.target.files])
            e.target.value = ''
          }}
        />
        <div className={styles.extra}>{toolbar}</div>
        {running ? (
          <span className={styles.hint}>
            <Kbd>Enter</Kbd> steer · <Kbd>Alt+Enter</Kbd> queue · <Kbd>Shift+Enter</Kbd> new line
          </span>
        ) : (
          <span className={styles.hint}>
            <Kbd>Enter</Kbd> send · <Kbd>Shift+Enter</Kbd> new line
          </span>
        )}
        {running && onStop ? (
          <button type="button" className={clsx(styles.roundButton, styles.stop)} onClick={onStop} aria-label="Stop">
            <Icon name="stop" />
          </button>
        ) : null}
        {running ? (
          <button
            type="button"
            className={styles.iconButton}
            onClick={() => void submit('queue')}
            disabled={empty || sending || disabled}
            aria-label="Queue message"
            title="Queue for after this turn (Alt+Enter)"
          >
            <Icon name="queue" />
          </button>
        ) : null}
        <button
          type="button"
          className={clsx(styles.roundButton, styles.send)}
          onClick={() => void submit()}
          disabled={empty || sending || disabled}
          aria-label={running ? 'Steer' : 'Send'}
        >
          <Icon name="send" />
        </button>
      </div>
    </div>
  )
}
