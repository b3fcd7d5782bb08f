import { memo, useSyncExternalStore } from 'react'
import { markdownBlocks, markdownVersion, onHighlighterReady } from '../../lib/markdown.ts'
import styles from './Markdown.module.css'

/** Sanitized Markdown; each top-level block renders once, so streaming only touches the last one. */
export const Markdown = memo(function Markdown({ text }: { text: string }) {
  // Code blocks drawn before highlight.js arrived are drawn again when it does: its arrival re-renders this
  // component, and markdownBlocks (cached by text) then renders them highlighted.
  useSyncExternalStore(onHighlighterReady, markdownVersion)
  const blocks = markdownBlocks(text)
  return (
    <div className={styles.markdown}>
      {blocks.map((block) => (
        <Block key={block.key} html={block.html} />
      ))}
    </div>
  )
})

const Block = memo(function Block({ html }: { html: string }) {
  // biome-ignore lint/security/noDangerouslySetInnerHtml: markdownBlocks returns HTML sanitized by DOMPurify (lib/markdown.ts)
  return <div className={styles.block} dangerouslySetInnerHTML={{ __html: html }} />
})
