/**
 * Per-sink flow control a tenant asks for on a KafkaSource, as annotations under Shoal's own domain (Knative
 * ignores them, so the manifest stays valid for Knative; a source without them is delivered exactly as before).
 * See docs/delivery.md "Per-sink flow control".
 */
export const FLOW_ANNOTATIONS = Object.freeze({
  /** Requests in flight to the sink at most, for this source: an integer 1 … 10000. */
  maxConcurrency: 'delivery.shoal.dev/max-concurrency',
  /** Requests per second to the sink at most, for this source: a number from 0.001 to 100000 (`0.5`: one per 2 s). */
  maxRate: 'delivery.shoal.dev/max-rate',
  /** `"true"`: the concurrency adapts to the sink (lower on 429/503/Retry-After/errors/latency, back up after). */
  adaptive: 'delivery.shoal.dev/adaptive-concurrency'
})

export const MAX_FLOW_CONCURRENCY = 10_000
export const MAX_FLOW_RATE = 100_000
/** One request every 1,000 s: slower is no rate a sink asks for, only a typo (and past what a timer can hold). */
export const MIN_FLOW_RATE = 0.001

/** A source's flow control as its annotations ask for it; absent fields: no such limit. */
export interface FlowControlSpec {
  readonly maxConcurrency?: number
  readonly maxRate?: number
  readonly adaptive: boolean
}

/** The flow control of a source's annotations; `none` when it sets none of them (the default path). */
export type FlowControlParse =
  | { readonly kind: 'none' }
  | { readonly kind: 'flow'; readonly flow: FlowControlSpec }
  | { readonly kind: 'invalid'; readonly errors: readonly FlowAnnotationError[] }

/** One annotation's bad value. */
export interface FlowAnnotationError {
  readonly annotation: string
  readonly message: string
}

const INTEGER = /^[1-9][0-9]*$/
const DECIMAL = /^(?:0|[1-9][0-9]*)(?:\.[0-9]+)?$/

/** Reads (and checks) the flow control annotations. */
export function parseFlowControl(annotations: Readonly<Record<string, unknown>> | undefined): FlowControlParse {
  const concurrency = annotations?.[FLOW_ANNOTATIONS.maxConcurrency]
  const rate = annotations?.[FLOW_ANNOTATIONS.maxRate]
  const adaptive = annotations?.[FLOW_ANNOTATIONS.adaptive]
  if (concurrency === undefined && rate === undefined && adaptive === undefined) return { kind: 'none' }
  const errors: FlowAnnotationError[] = []
  let maxConcurrency: number | undefined
  let maxRate: number | undefined
  if (concurrency !== undefined) {
    const n = typeof concurrency === 'string' && INTEGER.test(concurrency) ? Number(concurrency) : Number.NaN
    if (n >= 1 && n <= MAX_FLOW_CONCURRENCY) maxConcurrency = n
    else {
      errors.push({
        annotation: FLOW_ANNOTATIONS.maxConcurrency,
        message: `must be an integer from 1 to ${MAX_FLOW_CONCURRENCY} (requests in flight); got ${JSON.stringify(concurrency)}`
      })
    }
  }
  if (rate !== undefined) {
    const n = typeof rate === 'string' && DECIMAL.test(rate) ? Number(rate) : Number.NaN
    if (n >= MIN_FLOW_RATE && n <= MAX_FLOW_RATE) maxRate = n
    else {
      errors.push({
        annotation: FLOW_ANNOTATIONS.maxRate,
        message: `must be a number from ${MIN_FLOW_RATE} to ${MAX_FLOW_RATE} (requests per second); got ${JSON.stringify(rate)}`
      })
    }
  }
  if (adaptive !== undefined && adaptive !== 'true' && adaptive !== 'false') {
    errors.push({
      annotation: FLOW_ANNOTATIONS.adaptive,
      message: `must be "true" or "false"; got ${JSON.stringify(adaptive)}`
    })
  }
  if (errors.length > 0) return { kind: 'invalid', errors }
  if (maxConcurrency === undefined && maxRate === undefined && adaptive !== 'true') return { kind: 'none' }
  return {
    kind: 'flow',
    flow: Object.freeze({
      ...(maxConcurrency === undefined ? {} : { maxConcurrency }),
      ...(maxRate === undefined ? {} : { maxRate }),
      adaptive: adaptive === 'true'
    })
  }
}
