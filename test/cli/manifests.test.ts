import assert from 'node:assert/strict'
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { parseManifestText, readManifests } from '../../src/cli/manifests.ts'

const names = (objects: readonly { value: { metadata?: unknown } }[]): unknown[] =>
  objects.map(o => (o.value.metadata as { name?: unknown } | undefined)?.name)

test('multi-document YAML, skipping empty documents', () => {
  const text = `---\nkind: A\nmetadata: {name: one}\n---\n# only a comment\n---\nkind: B\nmetadata: {name: two}\n---\n`
  const parsed = parseManifestText(text, 'f.yaml')
  assert.deepEqual(parsed.errors, [])
  assert.deepEqual(names(parsed.objects), ['one', 'two'])
  assert.deepEqual(
    parsed.objects.map(o => o.source),
    ['f.yaml (object 1)', 'f.yaml (object 2)']
  )
})

test('JSON objects, JSON arrays and List kinds are flattened', () => {
  assert.deepEqual(names(parseManifestText('{"kind":"A","metadata":{"name":"j"}}', 'f.json').objects), ['j'])
  assert.deepEqual(
    names(parseManifestText('[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]', 'f.json').objects),
    ['a', 'b']
  )
  const list = `apiVersion: v1\nkind: List\nitems:\n- metadata: {name: x}\n- kind: KafkaSourceList\n  items:\n  - metadata: {name: y}\n`
  assert.deepEqual(names(parseManifestText(list, 'l.yaml').objects), ['x', 'y'])
})

test('a text that does not parse is one error naming the source and the position', () => {
  const parsed = parseManifestText('metadata: {name: ok}\n---\nkey: [unclosed\n', 'bad.yaml')
  assert.deepEqual(parsed.objects, [])
  assert.equal(parsed.errors.length, 1)
  assert.match(parsed.errors[0] ?? '', /^error parsing bad\.yaml: manifest is malformed at line \d+, column \d+: /)
})

test('a value that is not an object is an error naming it; the objects around it still come through', () => {
  const parsed = parseManifestText('metadata: {name: ok}\n---\n42\n', 'f.yaml')
  assert.deepEqual(names(parsed.objects), ['ok'])
  assert.deepEqual(parsed.errors, [
    'error parsing f.yaml (object 2): expected an object with apiVersion and kind, found number'
  ])
})

test('reads files, directories (sorted, manifest extensions only) and stdin, in order', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'shoal-cli-'))
  t.after(() => rm(dir, { recursive: true, force: true }))
  await mkdir(join(dir, 'd'))
  await writeFile(join(dir, 'd', 'b.yml'), 'metadata: {name: b}\n')
  await writeFile(join(dir, 'd', 'a.yaml'), 'metadata: {name: a}\n')
  await writeFile(join(dir, 'd', 'c.json'), '{"metadata":{"name":"c"}}')
  await writeFile(join(dir, 'd', 'notes.txt'), 'metadata: {name: ignored}\n')
  await writeFile(join(dir, 'single.yaml'), 'metadata: {name: s}\n')
  const read = await readManifests(
    [join(dir, 'single.yaml'), join(dir, 'd'), '-', join(dir, 'missing.yaml')],
    async () => 'metadata: {name: from-stdin}\n'
  )
  assert.deepEqual(names(read.objects), ['s', 'a', 'b', 'c', 'from-stdin'])
  assert.equal(read.objects[4]?.source, 'stdin')
  assert.deepEqual(read.errors, [`the path "${join(dir, 'missing.yaml')}" does not exist`])
})
