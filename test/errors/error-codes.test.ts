import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { ErrorCodes } from '../../src/errors/index.ts'

describe('docs/errors.md', () => {
  const docs = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8')
  const documented = new Set(docs.match(/SHOAL_[A-Z_]+[A-Z]/g) ?? [])
  const codes = new Set<string>(Object.values(ErrorCodes))

  it('documents every error code', () => {
    assert.deepEqual(
      [...codes].filter(c => !documented.has(c)),
      []
    )
  })

  it('documents no code that does not exist', () => {
    assert.deepEqual(
      [...documented].filter(c => !codes.has(c)),
      []
    )
  })

  it('gives every code a heading of its own', () => {
    for (const code of codes) assert.match(docs, new RegExp(`^#+ \`?${code}\`?\\s*$`, 'm'), code)
  })
})
