/** Where a perf run reports: periodic lines, progress, the final line. */
export interface PerfOutput {
  /** A line of output (window lines, the final line, headers). */
  line(text: string): void
  /** How far the run is; a terminal shows a bar, other outputs ignore it. */
  progress(done: number, total: number, detail: string): void
  /** Clears the bar before the final lines. */
  finish(): void
}

/** `[#########.........]  45% 4500/10000 detail` in `width` bar cells (pure). */
export function renderBar(done: number, total: number, width: number, detail: string): string {
  const fraction = total <= 0 ? 1 : Math.min(1, Math.max(0, done / total))
  const filled = Math.round(fraction * width)
  const percent = `${Math.floor(fraction * 100)}`.padStart(3)
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${percent}% ${done}/${total}${detail ? ` ${detail}` : ''}`
}

interface Stream {
  write(text: string): unknown
  readonly isTTY?: boolean
  readonly columns?: number
}

/**
 * A progress bar redrawn in place on a terminal, with lines printed above it; on anything else (a pipe, a
 * file, CI) plain lines only, so the output reads like Kafka's tools.
 */
export function perfOutput(stream: Stream, tty = stream.isTTY === true): PerfOutput {
  let shown = false
  let lastDraw = 0
  const clear = () => {
    if (shown) stream.write('\r\x1b[2K')
    shown = false
  }
  return {
    line(text) {
      clear()
      stream.write(`${text}\n`)
    },
    progress(done, total, detail) {
      if (!tty) return
      const now = Date.now()
      // Redrawing on every record would cost more than the run; ten times a second is plenty.
      if (now - lastDraw < 100 && done < total) return
      lastDraw = now
      const width = Math.max(10, Math.min(40, (stream.columns ?? 80) - 40 - detail.length))
      stream.write(`\r\x1b[2K${renderBar(done, total, width, detail)}`)
      shown = true
    },
    finish() {
      clear()
    }
  }
}
