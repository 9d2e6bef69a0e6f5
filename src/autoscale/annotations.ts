import type { FieldError } from '../errors/index.ts'
import { parseDuration } from '../util/index.ts'

/** The class value that turns lag-driven autoscaling on (Knative's KEDA integration names it so). */
export const KEDA_CLASS = 'keda.autoscaling.knative.dev'

/** Knative's current annotation names (eventing-kafka-broker, `autoscaling.eventing.knative.dev/*`). */
export const Annotations = {
  CLASS: 'autoscaling.eventing.knative.dev/class',
  MIN_SCALE: 'autoscaling.eventing.knative.dev/min-scale',
  MAX_SCALE: 'autoscaling.eventing.knative.dev/max-scale',
  LAG_THRESHOLD: 'autoscaling.eventing.knative.dev/lag-threshold',
  ACTIVATION_LAG_THRESHOLD: 'autoscaling.eventing.knative.dev/activation-lag-threshold',
  POLLING_INTERVAL: 'autoscaling.eventing.knative.dev/polling-interval',
  COOLDOWN_PERIOD: 'autoscaling.eventing.knative.dev/cooldown-period',
  /** Shoal's own: how long a step down between non-zero scales waits (default: the cooldown period). */
  STABILIZATION_WINDOW: 'autoscaling.shoal.dev/stabilization-window'
} as const

/** The older names still found in manifests (eventing-autoscaler-keda); the current name wins when both are set. */
export const LegacyAnnotations = {
  CLASS: 'autoscaling.knative.dev/class',
  MIN_SCALE: 'autoscaling.knative.dev/minScale',
  MAX_SCALE: 'autoscaling.knative.dev/maxScale',
  POLLING_INTERVAL: 'keda.autoscaling.knative.dev/pollingInterval',
  COOLDOWN_PERIOD: 'keda.autoscaling.knative.dev/cooldownPeriod',
  LAG_THRESHOLD: 'keda.autoscaling.knative.dev/kafkaLagThreshold'
} as const

/** How one autoscaled source follows its lag. Durations in milliseconds. */
export interface AutoscaleConfig {
  readonly minScale: number
  readonly maxScale: number
  readonly lagThreshold: number
  readonly activationLagThreshold: number
  readonly pollingIntervalMs: number
  readonly cooldownPeriodMs: number
  readonly stabilizationWindowMs: number
}

/**
 * The defaults: Knative's `config-kafka-autoscaler` (min 0, max 50, lag threshold 100, activation 0, cooldown
 * 30 s) except the polling interval, 1 s instead of 10 s, so a source at zero wakes in about a second.
 */
export const AUTOSCALE_DEFAULTS: AutoscaleConfig = Object.freeze({
  minScale: 0,
  maxScale: 50,
  lagThreshold: 100,
  activationLagThreshold: 0,
  pollingIntervalMs: 1_000,
  cooldownPeriodMs: 30_000,
  stabilizationWindowMs: 30_000
})

/** What a source's annotations say about autoscaling. */
export type AutoscaleSetting =
  | { readonly kind: 'off' }
  | { readonly kind: 'on'; readonly config: AutoscaleConfig }
  | { readonly kind: 'invalid'; readonly fields: readonly FieldError[] }

type Annotated = Readonly<Record<string, string>> | undefined

/**
 * Reads the autoscaling annotations of a KafkaSource. Autoscaling is on when the class (current or legacy name)
 * is `keda.autoscaling.knative.dev`; any other class belongs to another autoscaler and leaves the source at
 * `spec.consumers`. Scales and thresholds are whole numbers; intervals are seconds (`"1"`, `"0.5"`, or a Go-style
 * duration such as `"500ms"`, `"30s"`, `"2m"`). Every bad value is reported with its annotation's path.
 */
export function autoscaleSetting(annotations: Annotated): AutoscaleSetting {
  const a = annotations ?? {}
  const cls = a[Annotations.CLASS] ?? a[LegacyAnnotations.CLASS]
  if (cls !== KEDA_CLASS) return { kind: 'off' }
  const fields: FieldError[] = []
  const config = readConfig(annotationReader(a, fields))
  const { minScale, maxScale, cooldownPeriodMs, stabilizationWindowMs } = config
  if (fields.length === 0 && maxScale < minScale) {
    fields.push({
      path: `metadata.annotations["${Annotations.MAX_SCALE}"]`,
      message: `max-scale ${maxScale} is below min-scale ${minScale}`
    })
  }
  if (fields.length === 0 && stabilizationWindowMs > cooldownPeriodMs) {
    fields.push({
      path: `metadata.annotations["${Annotations.STABILIZATION_WINDOW}"]`,
      message: `the stabilization window may not be longer than the cooldown period (${cooldownPeriodMs / 1000} s)`
    })
  }
  if (fields.length > 0) return { kind: 'invalid', fields }
  return { kind: 'on', config: Object.freeze(config) }
}

/** Reads one setting from the first of its annotation `names` that is set; a bad value is reported, `fallback` used. */
type AnnotationReader = <T>(
  names: readonly string[],
  parse: (raw: string) => T | undefined,
  fallback: T,
  expected: string
) => T

function annotationReader(a: Readonly<Record<string, string>>, fields: FieldError[]): AnnotationReader {
  return (names, parse, fallback, expected) => {
    const name = names.find(n => a[n] !== undefined)
    if (name === undefined) return fallback
    const value = parse(a[name]!.trim())
    if (value === undefined) {
      fields.push({ path: `metadata.annotations["${name}"]`, message: `"${a[name]}" is not ${expected}` })
      return fallback
    }
    return value
  }
}

/** Every setting as the annotations say, each defaulted (and each bad one reported) on its own. */
function readConfig(read: AnnotationReader): AutoscaleConfig {
  const d = AUTOSCALE_DEFAULTS
  const minScale = read(
    [Annotations.MIN_SCALE, LegacyAnnotations.MIN_SCALE],
    wholeNumber,
    d.minScale,
    'a whole number >= 0'
  )
  const maxScale = read(
    [Annotations.MAX_SCALE, LegacyAnnotations.MAX_SCALE],
    positiveWhole,
    Math.max(d.maxScale, minScale),
    'a whole number >= 1'
  )
  const lagThreshold = read(
    [Annotations.LAG_THRESHOLD, LegacyAnnotations.LAG_THRESHOLD],
    positiveWhole,
    d.lagThreshold,
    'a whole number >= 1'
  )
  const activationLagThreshold = read(
    [Annotations.ACTIVATION_LAG_THRESHOLD],
    wholeNumber,
    d.activationLagThreshold,
    'a whole number >= 0'
  )
  const pollingIntervalMs = read(
    [Annotations.POLLING_INTERVAL, LegacyAnnotations.POLLING_INTERVAL],
    raw => atLeast(parseDuration(raw, 'seconds'), 100),
    d.pollingIntervalMs,
    'a number of seconds of at least 0.1 ("1", "0.5", "500ms")'
  )
  const cooldownPeriodMs = read(
    [Annotations.COOLDOWN_PERIOD, LegacyAnnotations.COOLDOWN_PERIOD],
    raw => atLeast(parseDuration(raw, 'seconds'), 0),
    d.cooldownPeriodMs,
    'a number of seconds ("30", "30s", "2m")'
  )
  const stabilizationWindowMs = read(
    [Annotations.STABILIZATION_WINDOW],
    raw => atLeast(parseDuration(raw, 'seconds'), 0),
    cooldownPeriodMs,
    'a number of seconds ("30", "30s", "2m")'
  )
  return {
    minScale,
    maxScale,
    lagThreshold,
    activationLagThreshold,
    pollingIntervalMs,
    cooldownPeriodMs,
    stabilizationWindowMs
  }
}

function wholeNumber(raw: string): number | undefined {
  if (!/^\d+$/.test(raw)) return undefined
  const n = Number(raw)
  return Number.isSafeInteger(n) ? n : undefined
}

function positiveWhole(raw: string): number | undefined {
  const n = wholeNumber(raw)
  return n !== undefined && n >= 1 ? n : undefined
}

function atLeast(ms: number | undefined, min: number): number | undefined {
  return ms !== undefined && ms >= min ? ms : undefined
}
