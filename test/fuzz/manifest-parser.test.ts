import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { parseManifests, validateResource } from '../../src/api/index.ts'
import { parseManifestText } from '../../src/cli/manifests.ts'
import { ErrorCodes, ShoalError } from '../../src/errors/index.ts'
import { aliasBomb, hostileBytes, hostileText, nested, validManifest } from './inputs.ts'

// The manifest parser and validator on hostile text: they answer with a ShoalError of a known code (or values)
// and never throw anything else, never overflow the stack, never expand an alias bomb. Time-boxed by numRuns.

const RUNS = Number(process.env['SHOAL_FUZZ_RUNS'] ?? 300)
const parseCodes = new Set<string>([ErrorCodes.MALFORMED, ErrorCodes.TOO_LARGE])
const validateCodes = new Set<string>([ErrorCodes.INVALID, ErrorCodes.UNKNOWN_KIND])

/** Parses and validates as the API does; returns what it decided, or throws what it should not have. */
function admit(text: string): 'refused' | 'accepted' {
  let values: unknown[]
  try {
    values = parseManifests(text)
  } catch (error) {
    if (error instanceof ShoalError && parseCodes.has(error.code)) return 'refused'
    throw error
  }
  let accepted = 0
  for (const value of values) {
    try {
      validateResource(value)
      accepted++
    } catch (error) {
      if (error instanceof ShoalError && validateCodes.has(error.code)) continue
      throw error
    }
  }
  return accepted > 0 ? 'accepted' : 'refused'
}

describe('fuzz: manifest parser', () => {
  it('answers every hostile text with values or a SHOAL_MALFORMED/TOO_LARGE/INVALID/UNKNOWN_KIND error', () => {
    fc.assert(
      fc.property(hostileText, text => {
        admit(text)
      }),
      { numRuns: RUNS }
    )
  })

  it('reads any bytes as the API would (fatal UTF-8) or as the CLI does (lenient), without other errors', () => {
    fc.assert(
      fc.property(hostileBytes, bytes => {
        let strict: string | undefined
        try {
          strict = new TextDecoder('utf-8', { fatal: true }).decode(bytes)
        } catch {
          strict = undefined
        }
        if (strict !== undefined) admit(strict)
        const read = parseManifestText(Buffer.from(bytes).toString('utf8'), 'fuzz.yaml')
        assert.ok(Array.isArray(read.objects) && Array.isArray(read.errors))
      }),
      { numRuns: RUNS }
    )
  })

  it('refuses alias bombs as too large instead of expanding them', () => {
    for (const [levels, fanout] of [
      [9, 9],
      [30, 2],
      [5, 50]
    ] as const) {
      assert.throws(
        () => parseManifests(aliasBomb(levels, fanout)),
        (error: unknown) => error instanceof ShoalError && error.code === ErrorCodes.TOO_LARGE,
        `${levels}×${fanout}`
      )
    }
  })

  it('refuses deep nesting with a ShoalError at every depth up to the size limit', () => {
    for (const depth of [65, 1_000, 100_000, 500_000]) {
      for (const kind of ['list', 'map'] as const) {
        assert.equal(admit(nested(depth, kind)), 'refused', `${kind} ${depth}`)
      }
    }
  })

  it('takes a UTF-8 BOM, and the CLI reports rather than throws on UTF-16 and invalid UTF-8 files', () => {
    assert.equal(admit(`\uFEFF${validManifest}`), 'accepted')
    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(validManifest, 'utf16le')])
    const read = parseManifestText(utf16.toString('utf8'), 'utf16.yaml')
    assert.equal(read.objects.length + read.errors.length > 0, true)
  })
})
