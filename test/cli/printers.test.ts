import assert from 'node:assert/strict'
import { test } from 'node:test'
import { KafkaSourceKind, PingSourceKind } from '../../src/api/index.ts'
import { cellText, renderResourceTable } from '../../src/cli/printers.ts'
import { kafkaSource, now, pingSource } from './fixtures.ts'

const plain = { wide: false, withNamespace: false, withKind: false, now }

test('KafkaSource columns follow Knative printer columns', () => {
  const text = renderResourceTable(
    KafkaSourceKind,
    [kafkaSource('orders-source'), kafkaSource('b', { ready: 'False', reason: 'SinkNotFound' })],
    plain
  )
  assert.equal(
    text,
    [
      'NAME            TOPICS       BOOTSTRAPSERVERS     READY   REASON         AGE',
      'orders-source   ["orders"]   ["localhost:9092"]   True                   5m',
      'b               ["orders"]   ["localhost:9092"]   False   SinkNotFound   5m',
      ''
    ].join('\n')
  )
})

test('wide adds SINK, CONSUMERS, LAG, DESIRED and PLACED; -A adds NAMESPACE first', () => {
  const text = renderResourceTable(KafkaSourceKind, [kafkaSource('a', { namespace: 'team-a' })], {
    ...plain,
    wide: true,
    withNamespace: true
  })
  const [header, row] = text.split('\n')
  assert.deepEqual(header?.split(/\s{3,}/), [
    'NAMESPACE',
    'NAME',
    'TOPICS',
    'BOOTSTRAPSERVERS',
    'READY',
    'REASON',
    'AGE',
    'SINK',
    'CONSUMERS',
    'LAG',
    'DESIRED',
    'PLACED'
  ])
  assert.match(row ?? '', /^team-a\s{3,}a\s{3,}.*http:\/\/sink\.example\/\s{3,}2$/)
})

test('PingSource columns, and TIMEZONE with wide', () => {
  const text = renderResourceTable(PingSourceKind, [pingSource('tick')], { ...plain, wide: true })
  const [header, row] = text.split('\n')
  assert.deepEqual(header?.split(/\s{3,}/), ['NAME', 'SINK', 'SCHEDULE', 'AGE', 'READY', 'REASON', 'TIMEZONE'])
  assert.deepEqual(row?.split(/\s{3,}/), [
    'tick',
    'http://sink.example/',
    '*/2 * * * *',
    '5m',
    'Unknown',
    'NotScheduled',
    'Europe/Paris'
  ])
})

test('several kinds in one listing name rows by qualified kind', () => {
  const text = renderResourceTable(PingSourceKind, [pingSource('tick')], { ...plain, withKind: true })
  assert.match(text, /^pingsource\.sources\.knative\.dev\/tick\s/m)
})

test('cells: arrays as JSON, missing fields empty', () => {
  assert.equal(cellText(['a', 'b']), '["a","b"]')
  assert.equal(cellText(undefined), '')
  assert.equal(cellText(3), '3')
})
