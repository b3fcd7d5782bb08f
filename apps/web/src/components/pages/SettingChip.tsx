import { clsx } from 'clsx'
import styles from './SessionHeader.module.css'

export interface SettingChipProps {
  label: string
  value: string
  options: readonly string[]
  /** How an option reads on the chip (e.g. `network on`). */
  format?: (option: string) => string
  disabled?: boolean
  onChange: (value: string) => void
}

/** A header chip that is a select: shows the session's setting and changes it. */
export function SettingChip({ label, value, options, format, disabled, onChange }: SettingChipProps) {
  const choices = options.includes(value) ? options : [value, ...options]
  return (
    <select
      className={clsx(styles.chip, styles.control)}
      aria-label={label}
      title={label}
      value={value}
      disabled={disabled}
      onChange={(event) => onChange(event.target.value)}
    >
      {choices.map((option) => (
        <option key={option} value={option}>
          {format ? format(option) : option}
        </option>
      ))}
    </select>
  )
}
