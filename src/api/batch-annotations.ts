import { tryParseIsoDuration } from './duration.ts'

// Batched delivery, opted into per KafkaSource by annotations (Shoal's extension: a Knative manifest without
// them is valid there and delivers one event per request here, as before). See docs/delivery.md.

/** The annotations that turn a KafkaSource's delivery into CloudEvents batches, and their limits. */
export const BATCH_ANNOTATIONS = Object.freeze({
  /** Events per batch at most (2–1000). Setting it turns batching on. */
  maxEvents: 'delivery.shoal.dev/batch-max-events',
  /** Record bytes (key, value, headers) per batch at most (1 KiB–16 MiB). Default 1 MiB. */
  maxBytes: 'delivery.shoal.dev/batch-max-bytes',
  /** How long a batch not full waits for more records, an ISO-8601 duration (PT0S–PT10S). Default PT0.05S. */
  maxWait: 'delivery.shoal.dev/batch-max-wait'
} as const)

/** The defaults of the optional batch annotations. */
export const BATCH_DEFAULTS = Object.freeze({ maxBytes: 1024 * 1024, maxWaitMs: 50 })

const LIMITS = { events: [2, 1000], bytes: [1024, 16 * 1024 * 1024], waitMs: [0, 10_000] } as const

/** A source's batch limits, from its annotations. */
export interface BatchSettings {
  readonly maxEvents: number
  readonly maxBytes: number
  readonly maxWaitMs: number
}

/**
 * Problems with the batch annotations, by annotation name (none when they are valid or absent). Each names
 * the annotation, so `shoal apply` says which one to fix.
 */
export function batchAnnotationErrors(annotations: Readonly<Record<string, unknown>>): Map<string, string> {
  const errors = new Map<string, string>()
  const events = annotations[BATCH_ANNOTATIONS.maxEvents]
  const bytes = annotations[BATCH_ANNOTATIONS.maxBytes]
  const wait = annotations[BATCH_ANNOTATIONS.maxWait]
  if (events !== undefined && integerIn(events, LIMITS.events) === undefined) {
    errors.set(BATCH_ANNOTATIONS.maxEvents, `${BATCH_ANNOTATIONS.maxEvents} must be an integer from 2 to 1000`)
  }
  if (bytes !== undefined && integerIn(bytes, LIMITS.bytes) === undefined) {
    errors.set(BATCH_ANNOTATIONS.maxBytes, `${BATCH_ANNOTATIONS.maxBytes} must be an integer from 1024 to 16777216`)
  }
  if (wait !== undefined && waitMs(wait) === undefined) {
    errors.set(
      BATCH_ANNOTATIONS.maxWait,
      `${BATCH_ANNOTATIONS.maxWait} must be an ISO-8601 duration from PT0S to PT10S`
    )
  }
  for (const name of [BATCH_ANNOTATIONS.maxBytes, BATCH_ANNOTATIONS.maxWait]) {
    if (annotations[name] !== undefined && events === undefined && !errors.has(name)) {
      errors.set(name, `${name} needs ${BATCH_ANNOTATIONS.maxEvents} (which turns batching on)`)
    }
  }
  return errors
}

/** A source's batch settings; undefined when it does not batch (or its annotations are not valid). */
export function batchSettingsOf(metadata: {
  readonly annotations?: Readonly<Record<string, string>>
}): BatchSettings | undefined {
  const annotations = metadata.annotations ?? {}
  const events = annotations[BATCH_ANNOTATIONS.maxEvents]
  if (events === undefined || batchAnnotationErrors(annotations).size > 0) return undefined
  const bytes = annotations[BATCH_ANNOTATIONS.maxBytes]
  const wait = annotations[BATCH_ANNOTATIONS.maxWait]
  return {
    maxEvents: integerIn(events, LIMITS.events) as number,
    maxBytes: bytes === undefined ? BATCH_DEFAULTS.maxBytes : (integerIn(bytes, LIMITS.bytes) as number),
    maxWaitMs: wait === undefined ? BATCH_DEFAULTS.maxWaitMs : (waitMs(wait) as number)
  }
}

function integerIn(value: unknown, [min, max]: readonly [number, number]): number | undefined {
  if (typeof value !== 'string' || !/^\d{1,9}$/.test(value)) return undefined
  const n = Number(value)
  return n >= min && n <= max ? n : undefined
}

function waitMs(value: unknown): number | undefined {
  if (typeof value !== 'string') return undefined
  const ms = tryParseIsoDuration(value)
  return ms !== undefined && ms >= LIMITS.waitMs[0] && ms <= LIMITS.waitMs[1] ? ms : undefined
}
