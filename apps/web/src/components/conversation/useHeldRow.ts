import type { Virtualizer, VirtualItem } from '@tanstack/react-virtual'
import { type RefObject, useCallback, useEffect, useLayoutEffect, useRef } from 'react'
import type { ConversationNode } from '../../model/nodes.ts'

/** How long a row is held in place after the row above it went away, unless the reader scrolls first. */
const HOLD_MS = 2000
/** Events by which the reader scrolls the list, which end such a hold. */
const READER_SCROLLS = ['wheel', 'touchstart', 'keydown', 'pointerdown'] as const

type ListVirtualizer = Virtualizer<HTMLElement, Element>

/** A row to keep where it is on screen: its key, its distance from the top of the view, and the canvas's offset in the scrolled content. */
interface HeldRow {
  key: VirtualItem['key']
  fromViewTop: number
  canvasTop: number
}

/**
 * The virtualizer keeps the row at the top of the view in place when rows
 * are added above it (`anchorTo: 'end'`). When that row itself goes away
 * (the "Loading earlier messages…" row, as the rest of the log arrives), this
 * keeps the row below it in place instead. Call it before `useVirtualizer`:
 * it notes that row from the DOM, which still shows the old rows. Pass
 * `hold` as the virtualizer's `onChange` and give it the virtualizer with
 * `track`. The row is held while the new rows between it and the top of the
 * view are measured, until the reader scrolls, for HOLD_MS at most. Nothing
 * is held while the list follows its end (`stick`).
 */
export function useHeldRow(
  nodes: readonly ConversationNode[],
  scrollRef: RefObject<HTMLElement | null>,
  canvasRef: RefObject<HTMLDivElement | null>,
  stick: RefObject<boolean>,
) {
  const shown = useRef<{ nodes: readonly ConversationNode[]; virtualizer?: ListVirtualizer }>({ nodes })
  const held = useRef<HeldRow | null>(null)
  if (shown.current.nodes !== nodes) {
    held.current =
      rowBelowVanishingTop(shown.current.virtualizer, nodes, scrollRef.current, canvasRef.current) ?? held.current
    shown.current.nodes = nodes
  }

  const hold = useCallback(
    (instance: ListVirtualizer) => {
      const row = held.current
      const el = scrollRef.current
      if (!row || !el) return
      const item = instance.measurementsCache.find((candidate) => candidate.key === row.key)
      if (!item) return
      const target = row.canvasTop + item.start - row.fromViewTop
      if (Math.abs(el.scrollTop - target) >= 1) el.scrollTop = target
    },
    [scrollRef],
  )

  const endHold = useRef<(() => void) | null>(null)
  // biome-ignore lint/correctness/useExhaustiveDependencies: runs after each render with new nodes (the rows just moved); the effect reads them through `shown`
  useLayoutEffect(() => {
    const virtualizer = shown.current.virtualizer
    if (!held.current || endHold.current || !virtualizer) return
    if (stick.current) {
      held.current = null
      return
    }
    hold(virtualizer)
    const el = scrollRef.current
    const end = () => {
      held.current = null
      endHold.current = null
      clearTimeout(timer)
      for (const type of READER_SCROLLS) el?.removeEventListener(type, end)
    }
    const timer = setTimeout(end, HOLD_MS)
    for (const type of READER_SCROLLS) el?.addEventListener(type, end, { passive: true })
    endHold.current = end
  }, [nodes, hold, scrollRef, stick])
  useEffect(() => () => endHold.current?.(), [])

  const track = (virtualizer: ListVirtualizer) => {
    shown.current.virtualizer = virtualizer
  }
  return { hold, track }
}

/**
 * When the row at the top of the view is not among `nodes` (it is going
 * away), the row below it, where it is on screen now; otherwise null.
 */
function rowBelowVanishingTop(
  virtualizer: ListVirtualizer | undefined,
  nodes: readonly ConversationNode[],
  scroller: HTMLElement | null,
  canvas: HTMLElement | null,
): HeldRow | null {
  if (!virtualizer || !scroller || !canvas) return null
  const offset = virtualizer.scrollOffset ?? 0
  const items = virtualizer.getVirtualItems()
  const at = items.findIndex((item) => item.end > offset)
  const top = items[at]
  const next = items[at + 1]
  // Most updates (streaming) leave the row at its index: only a moved row costs a search.
  if (!top || !next || nodes[top.index]?.key === top.key || nodes.some((node) => node.key === top.key)) return null
  const row = canvas.querySelector(`[data-index="${next.index}"]`)
  if (!row) return null
  const view = scroller.getBoundingClientRect().top
  return {
    key: next.key,
    fromViewTop: row.getBoundingClientRect().top - view,
    canvasTop: canvas.getBoundingClientRect().top - view + scroller.scrollTop,
  }
}
