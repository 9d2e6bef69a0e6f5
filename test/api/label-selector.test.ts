import assert from 'node:assert/strict'
import { test } from 'node:test'
import { formatRequirement, matchesSelector, parseSelector, serverSelector } from '../../src/api/index.ts'
import type { Requirement } from '../../src/api/index.ts'

function parse(text: string): readonly Requirement[] {
  const parsed = parseSelector(text)
  assert.ok(parsed.ok, parsed.ok ? '' : parsed.message)
  return parsed.requirements
}

test('parses equality, existence and set-based requirements', () => {
  assert.deepEqual(parse('a=b, c!=d,e,!f,g==h'), [
    { op: 'equals', key: 'a', value: 'b' },
    { op: 'notEquals', key: 'c', value: 'd' },
    { op: 'exists', key: 'e' },
    { op: 'notExists', key: 'f' },
    { op: 'equals', key: 'g', value: 'h' }
  ])
  assert.deepEqual(parse('env in (prod, staging),tier notin (db)'), [
    { op: 'in', key: 'env', values: ['prod', 'staging'] },
    { op: 'notIn', key: 'tier', values: ['db'] }
  ])
  assert.deepEqual(parse('app.kubernetes.io/name=shoal'), [
    { op: 'equals', key: 'app.kubernetes.io/name', value: 'shoal' }
  ])
  assert.deepEqual(parse('a='), [{ op: 'equals', key: 'a', value: '' }])
  assert.deepEqual(parse(''), [])
})

test('rejects malformed selectors with a message naming the requirement', () => {
  for (const bad of ['a=b,', '=b', 'a=b c', '-a', 'a in (x', `a=${'v'.repeat(64)}`, 'Bad_Prefix/x=y']) {
    const parsed = parseSelector(bad)
    assert.equal(parsed.ok, false, bad)
    if (!parsed.ok) assert.match(parsed.message, /unable to parse requirement/)
  }
})

test('matches with Kubernetes semantics', () => {
  const labels = { app: 'web', env: 'prod' }
  const cases: [string, boolean][] = [
    ['app=web', true],
    ['app=db', false],
    ['app!=db', true],
    ['missing!=x', true],
    ['env', true],
    ['!env', false],
    ['!missing', true],
    ['env in (prod,dev)', true],
    ['env notin (prod)', false],
    ['missing notin (x)', true],
    ['missing in (x)', false],
    ['app=web,env=dev', false]
  ]
  for (const [selector, want] of cases) assert.equal(matchesSelector(parse(selector), labels), want, selector)
  assert.equal(matchesSelector(parse('!a'), undefined), true)
})

test('the server is sent the whole selector, in canonical form', () => {
  assert.equal(serverSelector(parse('a==b, c!=d,e,!f,g in (h)')), 'a=b,c!=d,e,!f,g in (h)')
  assert.equal(parse('g in (h,i)').map(formatRequirement).join(), 'g in (h,i)')
})
