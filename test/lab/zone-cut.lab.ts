// Drill: a zone cut off from the other zones during traffic (test/lab/cut-drill.ts).
import { describe, it } from 'node:test'
import { cutDrill } from './cut-drill.ts'

describe('drill: a zone cut off from the other zones during traffic', () => {
  it('fences the zone, serves its sources from the other zones, settles after the heal, and loses nothing', () =>
    cutDrill('zone'))
})
