import type { DispatcherView } from '../../src/metrics/index.ts'

/** A running dispatcher with an empty contract that never fenced, as the metrics read it. */
export function idleDispatcher(id = 'dispatcher-0'): DispatcherView {
  return { id, contract: new Map(), contractOffset: -1n, running: true, fenced: false, fences: 0 }
}
