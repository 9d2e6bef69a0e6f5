// Drill: a dispatcher's packets to every other host dropped, the other way not (test/lab/cut-drill.ts).
import { describe, it } from 'node:test'
import { cutDrill } from './cut-drill.ts'

describe("drill: a dispatcher's packets to every other host dropped, the other way not", () => {
  it('fences the dispatcher, serves its sources elsewhere, settles after the heal, and loses nothing', () =>
    cutDrill('one-way'))
})
