import { CronExpressionParser } from 'cron-parser'
import type { CronExpression } from 'cron-parser'
import { ErrorCodes, ShoalError } from '../errors/index.ts'

const MACROS: Readonly<Record<string, string>> = {
  '@yearly': '@yearly',
  '@annually': '@annually',
  '@monthly': '@monthly',
  '@weekly': '@weekly',
  '@daily': '@daily',
  '@midnight': '@daily',
  '@hourly': '@hourly'
}

const IANA_NAME = /^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/

// A fixed reference date keeps validation pure; it only serves to check that the schedule ever fires.
const REFERENCE_DATE = new Date(Date.UTC(2000, 0, 1))

/** What is wrong with `timezone`, or undefined when it is an IANA zone name this runtime knows. */
export function checkTimezone(timezone: string): string | undefined {
  const hint = 'not an IANA time zone (for example Europe/Paris, America/New_York, UTC)'
  if (!IANA_NAME.test(timezone)) return hint
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone })
  } catch (error) {
    if (error instanceof RangeError) return hint
    throw error
  }
  return undefined
}

/** The expression cron-parser should see for `schedule`, or what is wrong with it. */
function normalizeSchedule(schedule: string): { expression: string } | { problem: string } {
  const fields = schedule.trim().split(/\s+/)
  const first = fields[0] ?? ''
  if (schedule.trim() === '') return { problem: 'must not be empty' }
  if (/^(CRON_)?TZ=/.test(first)) {
    return { problem: 'a CRON_TZ= or TZ= prefix is not supported; set spec.timezone instead' }
  }
  if (first.startsWith('@')) {
    if (first === '@every') return { problem: 'the @every descriptor is not supported (Knative refuses it too)' }
    const macro = MACROS[first]
    if (macro === undefined || fields.length !== 1) {
      return { problem: `unknown descriptor; use one of ${Object.keys(MACROS).join(', ')}` }
    }
    return { expression: macro }
  }
  if (fields.length !== 5 && fields.length !== 6) {
    return {
      problem: `has ${fields.length} fields; expected 5 (minute hour day-of-month month day-of-week) or 6 (seconds first)`
    }
  }
  if (fields.some(f => f.split(',').some(item => item.startsWith('H')))) {
    return {
      problem: 'the H (hash) symbol is not supported: it would fire at different times on different dispatchers'
    }
  }
  return { expression: fields.join(' ') }
}

/** What is wrong with `schedule` in `timezone` (undefined: UTC), or undefined when it parses and fires. */
export function checkSchedule(schedule: string, timezone?: string): string | undefined {
  const normalized = normalizeSchedule(schedule)
  if ('problem' in normalized) return `not a valid cron schedule: ${normalized.problem}`
  try {
    const expression = CronExpressionParser.parse(normalized.expression, {
      tz: timezone ?? 'UTC',
      currentDate: REFERENCE_DATE
    })
    expression.next()
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error)
    return `not a valid cron schedule: ${detail}`
  }
  return undefined
}

/**
 * The cron-parser expression of a validated schedule (5 fields, 6 with seconds first, or a macro such as
 * `@hourly`), iterating from `currentDate` in `timezone` (absent: UTC). Throws SHOAL_INVALID if invalid.
 */
export function parseSchedule(schedule: string, timezone?: string, currentDate?: Date): CronExpression {
  const problem = (timezone === undefined ? undefined : checkTimezone(timezone)) ?? checkSchedule(schedule, timezone)
  const normalized = normalizeSchedule(schedule)
  if (problem !== undefined || 'problem' in normalized) {
    throw new ShoalError(ErrorCodes.INVALID, `schedule ${JSON.stringify(schedule)}: ${problem ?? 'invalid'}`)
  }
  return CronExpressionParser.parse(normalized.expression, {
    tz: timezone ?? 'UTC',
    ...(currentDate === undefined ? {} : { currentDate })
  })
}
