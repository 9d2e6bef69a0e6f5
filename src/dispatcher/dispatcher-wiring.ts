import { DispatcherMetrics } from '../metrics/index.ts'
import { startDataPlane } from './data-plane.ts'
import type { DataPlane, DataPlaneOptions } from './data-plane.ts'
import { DEFAULT_SCHEDULE_CAPACITY } from './dispatcher-options.ts'
import type { DispatcherOptions } from './dispatcher-options.ts'
import { startDispatcher } from './dispatcher.ts'
import type { RunningDispatcher } from './dispatcher.ts'
import { closeInOrder } from '../util/index.ts'

/** Everything a dispatcher process runs, from options: `shoal dispatcher`, `shoal up` and the e2e perf. */
export interface DispatcherWiring {
  readonly dispatcher: DispatcherOptions
  /** Its planes; their observer is the metrics' when it has metrics. */
  readonly planes: Omit<DataPlaneOptions, 'observer'>
  /** Metrics in a registry of its own (DispatcherMetrics); none when absent. */
  readonly metrics?: { readonly maxSourceLabels?: number; readonly processMetrics?: boolean }
}

/** A dispatcher with its planes (and metrics) running. */
export interface WiredDispatcher {
  readonly dispatcher: RunningDispatcher
  readonly dataPlane: DataPlane
  readonly metrics: DispatcherMetrics | undefined
  /** Drains and stops the planes while it still heartbeats, then stops the dispatcher (DispatcherOptions.close). */
  close(options?: { readonly leave?: boolean }): Promise<void>
}

/**
 * Starts a dispatcher, then its metrics if asked, then the data plane of every source kind over the services
 * the dispatcher owns. A start that fails part way stops what it started.
 */
export async function startWiredDispatcher(wiring: DispatcherWiring): Promise<WiredDispatcher> {
  const options = wiring.dispatcher
  const dispatcher = await startDispatcher(options)
  try {
    const metrics =
      wiring.metrics === undefined
        ? undefined
        : new DispatcherMetrics({
            dispatcher,
            capacity: { consumer: options.capacity, schedule: options.scheduleCapacity ?? DEFAULT_SCHEDULE_CAPACITY },
            ...(wiring.metrics.maxSourceLabels === undefined
              ? {}
              : { maxSourceLabels: wiring.metrics.maxSourceLabels }),
            ...(wiring.metrics.processMetrics === undefined ? {} : { processMetrics: wiring.metrics.processMetrics })
          })
    const dataPlane = await startDataPlane(dispatcher, options, {
      ...wiring.planes,
      ...(metrics === undefined ? {} : { observer: metrics.observer })
    })
    metrics?.track(dataPlane)
    metrics?.trackSinks(dataPlane)
    metrics?.trackOrigins(dataPlane)
    return {
      dispatcher,
      dataPlane,
      metrics,
      // The dispatcher stops even when a plane's close failed (it would heartbeat on, holding its sources).
      close: closing => closeInOrder([() => dataPlane.close(), () => dispatcher.close(closing)])
    }
  } catch (error) {
    await dispatcher.close()
    throw error
  }
}
