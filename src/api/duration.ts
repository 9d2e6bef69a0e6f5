import { ErrorCodes, ShoalError } from '../errors/index.ts'

const MS = {
  Y: 365 * 86_400_000,
  M: 30 * 86_400_000,
  W: 7 * 86_400_000,
  D: 86_400_000,
  H: 3_600_000,
  min: 60_000,
  S: 1_000
} as const

// P[nY][nM][nW][nD][T[nH][nM][nS]]; a fraction (`.` or `,`) is allowed on the last component only.
const DURATION =
  /^P(?:(\d+(?:[.,]\d+)?)Y)?(?:(\d+(?:[.,]\d+)?)M)?(?:(\d+(?:[.,]\d+)?)W)?(?:(\d+(?:[.,]\d+)?)D)?(?:T(?:(\d+(?:[.,]\d+)?)H)?(?:(\d+(?:[.,]\d+)?)M)?(?:(\d+(?:[.,]\d+)?)S)?)?$/

/** Milliseconds of an ISO-8601 duration, or undefined when `text` is not one. */
export function tryParseIsoDuration(text: string): number | undefined {
  const match = DURATION.exec(text)
  if (match === null) return undefined
  const parts = match.slice(1)
  const present = parts.flatMap((p, i) => (p === undefined ? [] : [i]))
  if (present.length === 0) return undefined
  if (text.endsWith('T')) return undefined
  const last = present[present.length - 1]
  const units = [MS.Y, MS.M, MS.W, MS.D, MS.H, MS.min, MS.S]
  let total = 0
  for (const i of present) {
    const raw = parts[i] as string
    if (i !== last && /[.,]/.test(raw)) return undefined
    total += Number(raw.replace(',', '.')) * (units[i] as number)
  }
  const ms = Math.round(total)
  return Number.isSafeInteger(ms) ? ms : undefined
}

/**
 * Milliseconds of an ISO-8601 duration (`PT0.5S`, `PT1M`, `P1D`, `P1DT2H`). Years count 365 days and
 * months 30 days; negative durations are refused. Throws SHOAL_INVALID when `text` is not a duration.
 */
export function parseIsoDuration(text: string): number {
  const ms = tryParseIsoDuration(text)
  if (ms === undefined) {
    throw new ShoalError(ErrorCodes.INVALID, `${JSON.stringify(text)} is not an ISO-8601 duration`)
  }
  return ms
}
