import assert from 'node:assert/strict'
import { test } from 'node:test'
import { isShoalError } from '../../src/errors/index.ts'
import { parseResourceArgs } from '../../src/cli/resource-args.ts'

function kindsAndNames(args: string[]): [string, readonly string[]][] {
  return parseResourceArgs(args, 'get').map(r => [r.kind.kind, r.names])
}

test('reads plural, singular, kind, short and qualified names', () => {
  for (const type of ['kafkasources', 'kafkasource', 'KafkaSource', 'ks', 'kafkasources.sources.knative.dev']) {
    assert.deepEqual(kindsAndNames([type, 'x']), [['KafkaSource', ['x']]])
  }
})

test('all and comma lists expand to kinds, each once', () => {
  assert.deepEqual(kindsAndNames(['all']), [
    ['KafkaSource', []],
    ['PingSource', []]
  ])
  assert.deepEqual(kindsAndNames(['ps,ks,ps']), [
    ['PingSource', []],
    ['KafkaSource', []]
  ])
})

test('TYPE/NAME form groups names by kind', () => {
  assert.deepEqual(kindsAndNames(['ks/a', 'ps/b', 'kafkasource/c']), [
    ['KafkaSource', ['a', 'c']],
    ['PingSource', ['b']]
  ])
})

test('mistakes are usage errors naming the argument', () => {
  const cases: [string[], RegExp][] = [
    [[], /you must specify the type of resource to get/],
    [['foo'], /unknown resource type "foo"/],
    [['ks/a', 'b'], /resource\/name form/],
    [['ks/'], /must have a single resource and name/]
  ]
  for (const [args, message] of cases) {
    assert.throws(
      () => parseResourceArgs(args, 'get'),
      (error: unknown) => isShoalError(error, 'SHOAL_USAGE') && message.test(error.message)
    )
  }
})
