import { parseDuration } from '../util/index.ts'
import { ErrorCodes, ShoalError } from '../errors/index.ts'
import type { PoolBounds } from './decide.ts'

/** The most dispatchers a pool may name (ordinals are small numbers; a typo should not start a thousand processes). */
export const MAX_POOL_SIZE = 1000

/** `MIN..MAX` (or `N`: a fixed size) as given to `--dispatchers`; a bad value is a usage error naming the flag. */
export function parsePoolBounds(text: string, flag = '--dispatchers'): PoolBounds {
  const match = /^(\d+)(?:\.\.(\d+))?$/.exec(text.trim())
  const min = match ? Number(match[1]) : NaN
  const max = match ? Number(match[2] ?? match[1]) : NaN
  if (!Number.isSafeInteger(min) || !Number.isSafeInteger(max)) {
    throw new ShoalError(ErrorCodes.USAGE, `${flag} must be MIN..MAX (like 1..6) or a count, not "${text}"`)
  }
  if (min > max) throw new ShoalError(ErrorCodes.USAGE, `${flag}: MIN (${min}) is above MAX (${max}) in "${text}"`)
  if (max < 1 || max > MAX_POOL_SIZE) {
    throw new ShoalError(ErrorCodes.USAGE, `${flag}: MAX must be from 1 to ${MAX_POOL_SIZE}, not ${max}`)
  }
  return Object.freeze({ min, max })
}

/** `a,b,c` as given to `--zones`: distinct names, the dispatcher of ordinal N gets zone N mod count. */
export function parseZones(text: string, flag = '--zones'): readonly string[] {
  const zones = text.split(',').map(z => z.trim())
  const bad = zones.find(z => !/^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/.test(z))
  if (bad !== undefined) {
    throw new ShoalError(
      ErrorCodes.USAGE,
      `${flag} must be zone names separated by commas (letters, digits, - _ .), not "${text}" ("${bad}")`
    )
  }
  if (new Set(zones).size !== zones.length)
    throw new ShoalError(ErrorCodes.USAGE, `${flag} names a zone twice: "${text}"`)
  return Object.freeze(zones)
}

/** The zone of the dispatcher with this ordinal: round-robin over the zones. */
export function zoneOf(ordinal: number, zones: readonly string[]): string {
  return zones[ordinal % zones.length]!
}

/** `NS/NAME` as given to `--statefulset`. */
export function parseStatefulSetRef(text: string, flag = '--statefulset'): { namespace: string; name: string } {
  const dns = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/
  const [namespace, name, ...rest] = text.split('/')
  if (rest.length > 0 || !namespace || !name || !dns.test(namespace) || !dns.test(name) || name.length > 253) {
    throw new ShoalError(
      ErrorCodes.USAGE,
      `${flag} must be NAMESPACE/NAME of the dispatcher StatefulSet (lower-case DNS names), not "${text}"`
    )
  }
  return { namespace, name }
}

/** `--pool-stabilization`: a duration up to an hour, in ms; a bad value is a usage error naming the flag. */
export function parsePoolStabilization(text: string, flag = '--pool-stabilization'): number {
  const ms = parseDuration(text)
  if (ms === undefined || ms > 3_600_000)
    throw new ShoalError(ErrorCodes.USAGE, `${flag} must be a duration up to 1h like 30s, not "${text}"`)
  return ms
}
