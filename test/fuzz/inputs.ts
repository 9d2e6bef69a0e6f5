// Hostile manifest texts and request bodies for the fuzz suites: malformed YAML and JSON, huge and deeply
// nested documents, odd encodings, alias bombs, and mutations of a valid manifest.
import fc from 'fast-check'

export const validManifest = `apiVersion: sources.knative.dev/v1beta1
kind: KafkaSource
metadata:
  name: fuzz
  namespace: team-a
spec:
  bootstrapServers: ["kafka:9092"]
  topics: [orders]
  consumerGroup: team-a.fuzz
  sink:
    uri: http://sink.example/
`

/** A YAML "billion laughs": `levels` anchors, each a list of `fanout` aliases to the previous one. */
export function aliasBomb(levels: number, fanout: number): string {
  const lines = ['a0: &a0 ["lol"]']
  for (let i = 1; i <= levels; i++) {
    lines.push(`a${i}: &a${i} [${Array.from({ length: fanout }, () => `*a${i - 1}`).join(', ')}]`)
  }
  return `${lines.join('\n')}\n`
}

/** `depth` nested flow sequences or maps, in YAML or JSON syntax. */
export function nested(depth: number, kind: 'list' | 'map'): string {
  return kind === 'list' ? `${'['.repeat(depth)}1${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`
}

const yamlPunctuation = fc.constantFrom(
  ':',
  '- ',
  '? ',
  '&a ',
  '*a',
  '!!binary ',
  '!tag ',
  '%YAML 1.1\n',
  '---\n',
  '...\n',
  '|\n',
  '>-\n',
  '"',
  "'",
  '{',
  '}',
  '[',
  ']',
  ',',
  '#',
  '\t',
  '\n',
  '  ',
  '\\',
  '\u0000',
  '\uFEFF',
  '\uD800',
  '<<: *a\n',
  'kind: List\n',
  'items:\n'
)

/** Text made of YAML's syntax characters and random Unicode, including lone surrogates and NULs. */
export const yamlish: fc.Arbitrary<string> = fc
  .array(
    fc.oneof(
      yamlPunctuation,
      fc.string({ unit: 'grapheme', maxLength: 8 }),
      fc.string({ unit: 'binary', maxLength: 4 })
    ),
    {
      maxLength: 60
    }
  )
  .map(parts => parts.join(''))

/** A valid manifest with characters inserted, deleted or replaced at random places. */
export const mutatedManifest: fc.Arbitrary<string> = fc
  .array(
    fc.record({
      at: fc.nat({ max: validManifest.length }),
      remove: fc.nat({ max: 4 }),
      insert: fc.oneof(yamlPunctuation, fc.string({ maxLength: 3 }))
    }),
    { minLength: 1, maxLength: 5 }
  )
  .map(edits =>
    edits.reduce(
      (text, e) => text.slice(0, e.at) + e.insert + text.slice(Math.min(text.length, e.at + e.remove)),
      validManifest
    )
  )

/** Any of the hostile texts. */
export const hostileText: fc.Arbitrary<string> = fc.oneof(
  yamlish,
  mutatedManifest,
  fc.json({ depthSize: 'large' }),
  fc.jsonValue().map(v => JSON.stringify(v)),
  fc
    .record({ levels: fc.integer({ min: 2, max: 12 }), fanout: fc.integer({ min: 2, max: 12 }) })
    .map(b => aliasBomb(b.levels, b.fanout)),
  fc
    .record({ depth: fc.integer({ min: 1, max: 2_000 }), kind: fc.constantFrom('list' as const, 'map' as const) })
    .map(n => nested(n.depth, n.kind)),
  fc.constant('\uFEFF').map(bom => bom + validManifest.replace('name: fuzz', 'name: "')),
  fc.string({ unit: 'binary', maxLength: 200 })
)

/** Bytes no UTF-8 decoder accepts as they are, or that are UTF-8 in disguise: UTF-16 with and without BOM, random bytes. */
export const hostileBytes: fc.Arbitrary<Uint8Array> = fc.oneof(
  fc.uint8Array({ maxLength: 512 }),
  hostileText.map(t => new Uint8Array(Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(t, 'utf16le')]))),
  hostileText.map(t => new Uint8Array(Buffer.from(t, 'utf16le'))),
  hostileText.map(t => new Uint8Array(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(t)]))),
  fc.tuple(hostileText, fc.nat(), fc.constantFrom(0x80, 0xc0, 0xed, 0xf8, 0xff)).map(([t, at, bad]) => {
    const bytes = Buffer.from(t)
    const i = bytes.length === 0 ? 0 : at % bytes.length
    return new Uint8Array(Buffer.concat([bytes.subarray(0, i), Buffer.from([bad]), bytes.subarray(i)]))
  })
)
