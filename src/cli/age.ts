/**
 * How old something is, the way kubectl prints it in its AGE column: `5s`, `3m20s`, `2d4h`, `1y`.
 * The thresholds are kubectl's (k8s.io/apimachinery duration.HumanDuration), so the columns read alike.
 */
export function humanDuration(milliseconds: number): string {
  const seconds = Math.trunc(milliseconds / 1000)
  // Up to 2 s in the future is clock skew between client and server: "just now".
  if (seconds < -1) return '<invalid>'
  if (seconds < 0) return '0s'
  if (seconds < 60 * 2) return `${seconds}s`
  const minutes = Math.trunc(seconds / 60)
  if (minutes < 10) return withRemainder(minutes, 'm', seconds % 60, 's')
  if (minutes < 60 * 3) return `${minutes}m`
  const hours = Math.trunc(minutes / 60)
  if (hours < 8) return withRemainder(hours, 'h', minutes % 60, 'm')
  if (hours < 48) return `${hours}h`
  if (hours < 24 * 8) return withRemainder(Math.trunc(hours / 24), 'd', hours % 24, 'h')
  if (hours < 24 * 365 * 2) return `${Math.trunc(hours / 24)}d`
  const days = Math.trunc(hours / 24)
  if (hours < 24 * 365 * 8) return withRemainder(Math.trunc(days / 365), 'y', days % 365, 'd')
  return `${Math.trunc(days / 365)}y`
}

function withRemainder(major: number, majorUnit: string, minor: number, minorUnit: string): string {
  return minor === 0 ? `${major}${majorUnit}` : `${major}${majorUnit}${minor}${minorUnit}`
}

/** The AGE of a resource created at `timestamp` (RFC 3339), seen at `now`; `<unknown>` when absent or unreadable. */
export function age(timestamp: string | undefined, now: number): string {
  if (timestamp === undefined || timestamp === '') return '<unknown>'
  const created = Date.parse(timestamp)
  if (Number.isNaN(created)) return '<unknown>'
  return humanDuration(now - created)
}
