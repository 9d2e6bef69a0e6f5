import type { ContractRecord, MemberRecord } from '../store/index.ts'

/**
 * Checks of the JSON read from `shoal.members` and `shoal.contracts`: a record another process wrote is
 * input, and one malformed record must not take a dispatcher or a controller down. Each returns the record,
 * or why it is not one.
 */
export type Checked<T> =
  { readonly kind: 'ok'; readonly record: T } | { readonly kind: 'invalid'; readonly reason: string }

export function checkMemberRecord(value: unknown): Checked<MemberRecord> {
  if (!isObject(value)) return invalid('not an object')
  const problem =
    stringField(value, 'id') ??
    integerField(value, 'incarnation', 0) ??
    integerField(value, 'ordinal', 0) ??
    stringField(value, 'zone') ??
    stringField(value, 'node') ??
    slotsField(value, 'capacity') ??
    slotsField(value, 'used') ??
    stringField(value, 'contractOffset') ??
    stringField(value, 'startedAt')
  if (problem !== undefined) return invalid(problem)
  // The flow control and origin reports are for people: one that does not read is left out, never the heartbeat
  // with it (a live dispatcher must not look dead for it). Heartbeats of older versions have none.
  let record = value
  if (record['sinks'] !== undefined && !isSinkReports(record['sinks'])) {
    const { sinks: _sinks, sinksPartial: _partial, ...rest } = record
    record = rest
  }
  if (record['origins'] !== undefined && !isOriginReports(record['origins'])) {
    const { origins: _origins, originsPartial: _partial, ...rest } = record
    record = rest
  }
  return { kind: 'ok', record: record as unknown as MemberRecord }
}

function isOriginReports(value: unknown): boolean {
  return (
    Array.isArray(value) &&
    value.every(
      (r: unknown) =>
        isObject(r) &&
        typeof r['origin'] === 'string' &&
        integerField(r, 'inFlight', 0) === undefined &&
        integerField(r, 'oldestInFlightMs', 0) === undefined &&
        integerField(r, 'resent', 0) === undefined &&
        integerField(r, 'notAccepted', 0) === undefined
    )
  )
}

function isSinkReports(value: unknown): boolean {
  return (
    Array.isArray(value) &&
    value.every(
      (r: unknown) =>
        isObject(r) &&
        typeof r['source'] === 'string' &&
        typeof r['sink'] === 'string' &&
        typeof r['adaptive'] === 'boolean' &&
        integerField(r, 'limit', 0) === undefined &&
        integerField(r, 'inFlight', 0) === undefined &&
        integerField(r, 'queued', 0) === undefined &&
        (r['latencyMs'] === undefined || integerField(r, 'latencyMs', 0) === undefined)
    )
  )
}

export function checkContractRecord(value: unknown): Checked<ContractRecord> {
  if (!isObject(value)) return invalid('not an object')
  const problem =
    stringField(value, 'dispatcher') ??
    stringField(value, 'source') ??
    (value['slot'] === 'consumer' || value['slot'] === 'schedule' ? undefined : 'slot: not "consumer" or "schedule"') ??
    integerField(value, 'vreplicas', 1) ??
    stringField(value, 'resourceVersion') ??
    integerField(value, 'epoch', 0) ??
    (value['movedFrom'] === undefined ||
    (Array.isArray(value['movedFrom']) &&
      value['movedFrom'].every(
        (m: unknown) =>
          isObject(m) &&
          typeof m['dispatcher'] === 'string' &&
          typeof m['at'] === 'string' &&
          Number.isFinite(Date.parse(m['at'])) &&
          (m['offset'] === undefined || isOffset(m['offset'])) &&
          (m['incarnation'] === undefined || Number.isSafeInteger(m['incarnation']))
      ))
      ? undefined
      : 'movedFrom: not a list of {dispatcher, at, offset?, incarnation?}') ??
    (value['heldSince'] === undefined || isOffset(value['heldSince']) ? undefined : 'heldSince: not an offset')
  if (problem !== undefined) return invalid(problem)
  return { kind: 'ok', record: value as unknown as ContractRecord }
}

function isOffset(value: unknown): boolean {
  return typeof value === 'string' && /^\d+$/.test(value)
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function invalid(reason: string): { kind: 'invalid'; reason: string } {
  return { kind: 'invalid', reason }
}

function stringField(value: Record<string, unknown>, name: string): string | undefined {
  return typeof value[name] === 'string' ? undefined : `${name}: not a string`
}

function integerField(value: Record<string, unknown>, name: string, min: number): string | undefined {
  const field = value[name]
  return Number.isSafeInteger(field) && (field as number) >= min ? undefined : `${name}: not an integer >= ${min}`
}

function slotsField(value: Record<string, unknown>, name: string): string | undefined {
  const field = value[name]
  if (!isObject(field)) return `${name}: not an object`
  const problem = integerField(field, 'consumers', 0) ?? integerField(field, 'schedules', 0)
  return problem === undefined ? undefined : `${name}.${problem}`
}
