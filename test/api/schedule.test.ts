import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { parseSchedule } from '../../src/api/index.ts'
import { catchShoal } from './helpers.ts'

const from = new Date('2025-01-01T00:00:30Z')

describe('parseSchedule', () => {
  it('iterates a 5-field schedule in UTC by default', () => {
    assert.equal(parseSchedule('*/15 * * * *', undefined, from).next().toISOString(), '2025-01-01T00:15:00.000Z')
  })

  it('reads 6 fields with seconds first', () => {
    assert.equal(parseSchedule('*/10 * * * * *', undefined, from).next().toISOString(), '2025-01-01T00:00:40.000Z')
  })

  it('honours the time zone', () => {
    assert.equal(parseSchedule('0 9 * * *', 'Europe/Paris', from).next().toISOString(), '2025-01-01T08:00:00.000Z')
  })

  it('understands @midnight, which cron-parser does not know, as @daily', () => {
    assert.equal(parseSchedule('@midnight', 'UTC', from).next().toISOString(), '2025-01-02T00:00:00.000Z')
  })

  it('refuses what validation refuses', () => {
    catchShoal(() => parseSchedule('* * * *'), 'SHOAL_INVALID')
    catchShoal(() => parseSchedule('* * * * *', 'Mars/Olympus'), 'SHOAL_INVALID')
  })
})
