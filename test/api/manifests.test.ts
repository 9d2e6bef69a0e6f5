import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { DEFAULT_MAX_MANIFEST_BYTES, parseManifests } from '../../src/api/index.ts'
import { catchShoal } from './helpers.ts'

describe('parseManifests', () => {
  it('reads multi-document YAML, skipping empty documents', () => {
    const text = '---\n---\na: 1\n---\n# only a comment\n---\nb: [1, 2]\n...\n---\n~\n'
    assert.deepEqual(parseManifests(text), [{ a: 1 }, { b: [1, 2] }])
  })

  it('reads JSON, and expands a JSON array', () => {
    assert.deepEqual(parseManifests('{"a": 1}'), [{ a: 1 }])
    assert.deepEqual(parseManifests('[{"a": 1}, {"b": 2}]'), [{ a: 1 }, { b: 2 }])
  })

  it('expands a kind: List to its items', () => {
    const text = 'apiVersion: v1\nkind: List\nitems:\n- {a: 1}\n- {b: 2}\n---\nc: 3\n'
    assert.deepEqual(parseManifests(text), [{ a: 1 }, { b: 2 }, { c: 3 }])
  })

  it('returns nothing for an empty text', () => {
    assert.deepEqual(parseManifests(''), [])
    assert.deepEqual(parseManifests('\uFEFF# nothing\n'), [])
  })

  it('uses YAML 1.2: yes, on and 0777 are not booleans or octal', () => {
    assert.deepEqual(parseManifests('a: yes\nb: on\nc: 0777\nd: 2020-01-01T00:00:00Z\n'), [
      { a: 'yes', b: 'on', c: 777, d: '2020-01-01T00:00:00Z' }
    ])
  })

  it('supports anchors and merge keys within limits', () => {
    assert.deepEqual(parseManifests('base: &b {x: 1}\nthis: {<<: *b, y: 2}\n'), [
      { base: { x: 1 }, this: { x: 1, y: 2 } }
    ])
  })

  for (const [name, text, line, column] of [
    ['an unclosed flow sequence', 'a: 1\nb: [1, 2\nc: 3\n', 3, 1],
    ['a duplicate key', 'a: 1\na: 2\n', 2, 1],
    ['malformed JSON', '{"a": 1,, }', 1, 9],
    ['a custom tag', 'a: !foo bar\n', 1, 4],
    ['a YAML 1.1 binary tag', 'a: !!binary aGVsbG8=\n', 1, 4],
    ['a collection as a key', '? [a, b]\n: c\n', 1, 3],
    ['an error in the second document', 'a: 1\n---\nb: 1\nb: 2\n', 4, 1]
  ] as const) {
    it(`refuses ${name} with its line and column`, () => {
      const error = catchShoal(() => parseManifests(text), 'SHOAL_MALFORMED')
      assert.match(error.message, new RegExp(`line ${line}, column ${column}`))
      assert.equal(error.fields[0]?.path, `line ${line}, column ${column}`)
    })
  }

  it('refuses an alias to a missing anchor', () => {
    catchShoal(() => parseManifests('a: *missing\n'), 'SHOAL_MALFORMED')
  })

  it('refuses a text over the size limit, counting UTF-8 bytes', () => {
    assert.equal(DEFAULT_MAX_MANIFEST_BYTES, 1024 * 1024)
    const big = `a: "${'x'.repeat(DEFAULT_MAX_MANIFEST_BYTES)}"\n`
    const error = catchShoal(() => parseManifests(big), 'SHOAL_TOO_LARGE')
    assert.match(error.message, /limit is 1048576 bytes/)
    catchShoal(() => parseManifests('a: ééé\n', { maxBytes: 8 }), 'SHOAL_TOO_LARGE')
    assert.deepEqual(parseManifests('a: é\n', { maxBytes: 8 }), [{ a: 'é' }])
  })

  it('refuses a billion laughs without expanding it', () => {
    const lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for (const [prev, next] of [
      ['a', 'b'],
      ['b', 'c'],
      ['c', 'd'],
      ['d', 'e'],
      ['e', 'f'],
      ['f', 'g'],
      ['g', 'h'],
      ['h', 'i']
    ]) {
      lines.push(`${next}: &${next} [${Array(9).fill(`*${prev}`).join(',')}]`)
    }
    // 9^9 strings if expanded: the parser counts the aliases instead and refuses before expanding them.
    const error = catchShoal(() => parseManifests(lines.join('\n')), 'SHOAL_TOO_LARGE')
    assert.match(error.message, /too many aliases/)
  })

  it('does not let __proto__ keys touch prototypes', () => {
    const [value] = parseManifests('__proto__: {polluted: true}\n')
    assert.equal(({} as Record<string, unknown>)['polluted'], undefined)
    assert.deepEqual(Object.keys(value as object), ['__proto__'])
  })
})
