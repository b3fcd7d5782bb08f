import { useVirtualizer } from '@tanstack/react-virtual'
import { type ReactNode, useCallback, useEffect, useLayoutEffect, useRef, useState } from 'react'
import { afterNextPaint } from '../../lib/after-paint.ts'
import type { ConversationNode } from '../../model/nodes.ts'
import { Icon } from '../common/Icon.tsx'
import styles from './MessageList.module.css'
import { NodeView } from './NodeView.tsx'
import { useHeldRow } from './useHeldRow.ts'

/** Within this many pixels of the end, the list follows new content. */
const STICK_PX = 48
/** Rows rendered beyond the view on each side, for smooth scrolling; fewer while the list opens. */
const OVERSCAN = 8
const OPENING_OVERSCAN = 1

/**
 * The conversation rows, virtualised: only rows near the viewport are in the
 * DOM, each measured once it renders, starting from the end. While the reader
 * is at the end the list stays pinned to it as replies stream (a
 * ResizeObserver scrolls after layout, so no layout is forced); rows that
 * grow above the viewport shift the scroll position by the same amount, so
 * nothing jumps.
 */
export function MessageList({ nodes, footer }: { nodes: readonly ConversationNode[]; footer?: ReactNode }) {
  const scrollRef = useRef<HTMLElement>(null)
  const contentRef = useRef<HTMLDivElement>(null)
  const canvasRef = useRef<HTMLDivElement>(null)
  const stick = useRef(true)
  const [atEnd, setAtEnd] = useState(true)
  // Rows beyond the view are rendered only after the first paint: it needs just what is seen.
  const [overscan, setOverscan] = useState(OPENING_OVERSCAN)
  useEffect(() => {
    const stop = new AbortController()
    afterNextPaint(() => setOverscan(OVERSCAN), stop.signal)
    return () => stop.abort()
  }, [])
  // When the row at the top of the view goes away, the row below it stays where it is (see useHeldRow).
  const heldRow = useHeldRow(nodes, scrollRef, canvasRef, stick)
  const virtualizer = useVirtualizer({
    count: nodes.length,
    getScrollElement: () => scrollRef.current,
    estimateSize: (index) => estimateHeight(nodes[index]),
    getItemKey: (index) => nodes[index]?.key ?? index,
    overscan,
    // Open at the end: the first render already picks the last rows. The window's size stands in
    // for the scroller's until it is measured (a bit taller, so the first rows cover the view).
    initialOffset: () => Number.MAX_SAFE_INTEGER,
    initialRect: { width: window.innerWidth, height: window.innerHeight },
    // Rows added above (the earlier part of the log arriving) leave the rows on screen where they are.
    anchorTo: 'end',
    onChange: heldRow.hold,
  })
  heldRow.track(virtualizer)
  const total = virtualizer.getTotalSize()

  // Rows of the first commit are measured once the virtualizer knows its scroll element (its own
  // layout effect, which runs after the rows' refs), so its scroll corrections reach the element.
  const bound = useRef(false)
  const measureRow = useCallback(
    (node: HTMLDivElement | null) => {
      if (bound.current) virtualizer.measureElement(node)
    },
    [virtualizer],
  )
  useLayoutEffect(() => {
    bound.current = true
    for (const row of contentRef.current?.querySelectorAll<HTMLDivElement>('[data-index]') ?? [])
      virtualizer.measureElement(row)
  }, [virtualizer])

  const onScroll = useCallback(() => {
    const el = scrollRef.current
    if (!el) return
    const end = el.scrollHeight - el.scrollTop - el.clientHeight < STICK_PX
    stick.current = end
    setAtEnd(end)
  }, [])

  useEffect(() => {
    const el = scrollRef.current
    const content = contentRef.current
    if (!el || !content) return
    const observer = new ResizeObserver(() => {
      if (stick.current) el.scrollTop = el.scrollHeight
    })
    observer.observe(content)
    observer.observe(el)
    return () => observer.disconnect()
  }, [])

  const toEnd = () => {
    const el = scrollRef.current
    if (!el) return
    stick.current = true
    el.scrollTop = el.scrollHeight
    setAtEnd(true)
  }

  return (
    <div className={styles.wrap}>
      {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region takes focus so keyboards can scroll it */}
      <section ref={scrollRef} className={styles.scroller} onScroll={onScroll} tabIndex={0} aria-label="Conversation">
        <div ref={contentRef} className={styles.column}>
          <div ref={canvasRef} className={styles.canvas} style={{ height: total }}>
            {virtualizer.getVirtualItems().map((item) => {
              const node = nodes[item.index] as ConversationNode
              return (
                <div
                  key={item.key}
                  data-index={item.index}
                  ref={measureRow}
                  className={styles.row}
                  style={{ transform: `translateY(${item.start}px)` }}
                >
                  <NodeView node={node} />
                </div>
              )
            })}
          </div>
          {footer}
        </div>
      </section>
      {!atEnd ? (
        <button type="button" className={styles.jump} onClick={toEnd} aria-label="Scroll to the latest message">
          <Icon name="up" size={14} /> Latest
        </button>
      ) : null}
    </div>
  )
}

function estimateHeight(node: ConversationNode | undefined): number {
  switch (node?.kind) {
    case 'user':
      return 64
    case 'tool':
      return 48
    case 'turn-end':
      return 36
    case 'reasoning':
    case 'notice':
    case 'context':
      return 32
    case 'text':
      return Math.min(600, 28 + Math.ceil(node.text.length / 90) * 24)
    default:
      return 40
  }
}
