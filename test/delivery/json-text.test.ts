import assert from 'node:assert/strict'
import { isUtf8 } from 'node:buffer'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { isJsonText } from '../../src/delivery/json-text.ts'

// The truth: what JSON.parse accepts of the bytes decoded as UTF-8, less what strict parsers refuse (I-JSON): a
// number that is no double (JSON.parse makes it Infinity) and a string, name or value, that is not well-formed
// UTF-16 (a lone surrogate escape).
function parses(bytes: Buffer): boolean {
  if (!isUtf8(bytes)) return false
  try {
    // Walked without recursion: the texts go 100,000 deep.
    const stack: unknown[] = [JSON.parse(bytes.toString('utf8'))]
    while (stack.length > 0) {
      const value = stack.pop()
      if (typeof value === 'number' && !Number.isFinite(value)) return false
      if (typeof value === 'string' && !wellFormed(value)) return false
      if (Array.isArray(value)) stack.push(...(value as unknown[]))
      else if (typeof value === 'object' && value !== null) {
        for (const [key, member] of Object.entries(value)) {
          if (!wellFormed(key)) return false
          stack.push(member)
        }
      }
    }
    return true
  } catch {
    return false
  }
}

const agree = (bytes: Buffer) => assert.equal(isJsonText(bytes) && isUtf8(bytes), parses(bytes), bytes.toString())

const space = fc.constantFrom('', ' ', '\n', '\t', '\r\n', '  ')

// JSON texts with whitespace in them and around them.
const jsonText = fc
  .tuple(fc.jsonValue(), fc.constantFrom(undefined, 1, '\t'), space, space)
  .map(([value, indent, before, after]) => before + JSON.stringify(value, null, indent) + after)

// One edit of a text: a byte removed, replaced or inserted from an alphabet of JSON's own characters.
const alphabet = fc.constantFrom(
  ...'{}[]":,\\/ -+.0123456789eEtrufalsn\u0000\t\n\u001fxé'.split(''),
  '\\ud800',
  '\\udc00',
  '\\uDBFF\\uDFFF',
  'e400',
  'E-400',
  '1'.repeat(320)
)
const edited = fc
  .tuple(jsonText, fc.nat(), fc.constantFrom('remove', 'replace', 'insert'), alphabet)
  .map(([text, at, edit, char]) => {
    const i = text.length === 0 ? 0 : at % text.length
    if (edit === 'remove') return text.slice(0, i) + text.slice(i + 1)
    if (edit === 'replace') return text.slice(0, i) + char + text.slice(i + 1)
    return text.slice(0, i) + char + text.slice(i)
  })

describe('isJsonText: exactly what JSON.parse accepts, less what strict parsers refuse', () => {
  it('JSON texts, with whitespace anywhere JSON allows it', () => {
    fc.assert(
      fc.property(jsonText, text => {
        assert.equal(isJsonText(Buffer.from(text)), true, text)
      }),
      { numRuns: 2_000 }
    )
  })

  it('texts one edit away from JSON, strings of its characters, and any bytes', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          edited.map(text => Buffer.from(text)),
          fc.array(alphabet, { maxLength: 30 }).map(chars => Buffer.from(chars.join(''))),
          fc.uint8Array({ maxLength: 64 }).map(bytes => Buffer.from(bytes)),
          fc.string({ unit: 'binary' }).map(text => Buffer.from(text))
        ),
        agree
      ),
      { numRuns: 10_000 }
    )
  })

  it('the corners', () => {
    const cases = [
      '',
      ' ',
      '0',
      '-0',
      '00',
      '-',
      '1.',
      '.5',
      '1e',
      '1e+',
      '1E-7',
      '01',
      '-01',
      '1.5e308',
      '1e400',
      'true',
      'tru',
      'truex',
      'nul',
      'null ',
      'false',
      '"\\u00e9"',
      '"\\u00G9"',
      '"\\u12"',
      '"\\x"',
      '"\\/"',
      '"a\tb"',
      '"\\ud800"',
      '"\\ud800x"',
      '"\\ud800\\u0041"',
      '"\\udc00"',
      '"\\ud83d\\ude00"',
      '"\\uD83D\\uDE00"',
      '"\\ud83d\\ude00\\udc00"',
      '{"\\ud800":1}',
      '-1e400',
      '1e-400',
      '1.7976931348623157e308',
      '1.8e308',
      '"é"',
      '{"a":1,}',
      '[1,]',
      '[,1]',
      '{"a" 1}',
      '{1:2}',
      '{"a":1 "b":2}',
      '[1 2]',
      '{}',
      '[]',
      '[{}]',
      '{"a":[]}',
      '[1]]',
      '[[1]',
      '"unterminated',
      '"a"b',
      '\u00a01',
      '\ufeff1',
      '1\u000b'
    ]
    for (const text of cases) agree(Buffer.from(text))
    agree(Buffer.from([0x22, 0xff, 0x22]))
  })

  it('any depth, as JSON.parse takes', () => {
    const depth = 100_000
    agree(Buffer.from('['.repeat(depth) + ']'.repeat(depth)))
    agree(Buffer.from('{"a":'.repeat(depth) + '1' + '}'.repeat(depth)))
    agree(Buffer.from('['.repeat(depth) + ']'.repeat(depth - 1)))
  })
})

// String.prototype.isWellFormed (ES2024; the project types ES2023): no lone surrogate.
function wellFormed(text: string): boolean {
  return (text as unknown as { isWellFormed(): boolean }).isWellFormed()
}
