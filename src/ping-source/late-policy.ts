import type { CronTicks } from './cron-ticks.ts'

/**
 * What a dispatcher does with the ticks a schedule missed — while its previous owner was dead, while it was
 * fenced, or while its process stalled: fire them `all` (the newest `maxLateTicks` of them), only the `last`,
 * or `none`. Fired ones carry the LATE_EXTENSION.
 */
export type LatePolicy = 'all' | 'last' | 'none'

/** The default policy of a dispatcher (`--ping-late-ticks`). */
export const DEFAULT_LATE_POLICY: LatePolicy = 'all'

/** The most missed ticks of one schedule fired in one go under `all`; older ones are skipped (and logged). */
export const DEFAULT_MAX_LATE_TICKS = 100

/** A source's own policy, overriding the dispatcher's: `metadata.annotations["shoal.dev/late-ticks"]`. */
export const LATE_POLICY_ANNOTATION = 'shoal.dev/late-ticks'

/** The CloudEvents extension on a tick fired late by catch-up: `shoallate: true`. */
export const LATE_EXTENSION = 'shoallate'

export function isLatePolicy(value: unknown): value is LatePolicy {
  return value === 'all' || value === 'last' || value === 'none'
}

/**
 * The policy a source asks for with its annotation's value, or `fallback` when it has none; a value that is not a
 * policy yields `invalid` so the caller can say so.
 */
export function latePolicyOf(
  value: string | undefined,
  fallback: LatePolicy
): { readonly policy: LatePolicy; readonly invalid?: string } {
  if (value === undefined) return { policy: fallback }
  if (isLatePolicy(value)) return { policy: value }
  return { policy: fallback, invalid: value }
}

/**
 * The missed ticks in (after, through] to fire under `policy`, oldest first, and whether `all` left older
 * ones out because of `maxLateTicks`.
 */
export function lateTicks(
  cron: CronTicks,
  after: number,
  through: number,
  policy: LatePolicy,
  maxLateTicks: number
): { readonly ticks: number[]; readonly truncated: boolean } {
  if (policy === 'none' || through <= after) return { ticks: [], truncated: false }
  if (policy === 'last') return { ticks: cron.ticksIn(after, through, 1).ticks, truncated: false }
  return cron.ticksIn(after, through, maxLateTicks)
}
