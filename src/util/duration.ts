/**
 * What a number without a unit means. Knative's and KEDA's autoscaling annotations write whole seconds (`"30"`),
 * and so may `--request-timeout` (`0` = never); the process flags refuse it, because `--liveness-timeout 10`
 * could as well mean milliseconds.
 */
export type BareNumber = 'seconds' | 'refused'

const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }

/**
 * Milliseconds of a flag or annotation duration, or undefined when `text` is not one. The one rule: a
 * non-negative decimal number and one unit of `ms`, `s`, `m` or `h` (`500ms`, `10s`, `2.5s`, `2m`, `1h`);
 * surrounding blanks are ignored; a bare number counts as seconds only when `bare` is `'seconds'`; the result is
 * rounded to a whole millisecond and must be a safe integer. Negative values, ISO-8601 (`PT1S`, see
 * api/duration.ts for Knative's delivery spec) and Go's compound forms (`1m30s`) are not durations here.
 */
export function parseDuration(text: string, bare: BareNumber = 'refused'): number | undefined {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim())
  if (match === null) return undefined
  const unit = match[2] ?? (bare === 'seconds' ? 's' : undefined)
  if (unit === undefined) return undefined
  const ms = Math.round(Number(match[1]) * (UNIT_MS[unit] as number))
  return Number.isSafeInteger(ms) ? ms : undefined
}

/** The message for a value of flag or annotation `name` that is not a duration: names it and shows the rule. */
export function notADuration(name: string, text: string, bare: BareNumber = 'refused'): string {
  const forms =
    bare === 'seconds' ? 'seconds ("30") or a duration like 30s, 2m or 500ms' : 'a duration like 10s, 2m or 500ms'
  return `${name} must be ${forms}, not "${text}"`
}
