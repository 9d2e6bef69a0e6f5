// Drill: a dispatcher's host cut off from every other host during traffic (test/lab/cut-drill.ts).
import { describe, it } from 'node:test'
import { cutDrill } from './cut-drill.ts'

describe("drill: a dispatcher's host cut off from every other host during traffic", () => {
  it('fences the dispatcher, serves its sources elsewhere, settles after the heal, and loses nothing', () =>
    cutDrill('dispatcher'))
})
