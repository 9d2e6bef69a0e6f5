import assert from 'node:assert/strict'
import { test } from 'node:test'
import { fieldLabel, renderDescribe } from '../../src/cli/describe-format.ts'
import { kafkaSource } from './fixtures.ts'

test('field labels read like kubectl describe', () => {
  assert.equal(fieldLabel('bootstrapServers'), 'Bootstrap Servers')
  assert.equal(fieldLabel('sinkUri'), 'Sink URI')
  assert.equal(fieldLabel('apiVersion'), 'API Version')
  assert.equal(fieldLabel('uid'), 'UID')
  assert.equal(fieldLabel('observedGeneration'), 'Observed Generation')
  assert.equal(fieldLabel('app.kubernetes.io/name'), 'app.kubernetes.io/name')
})

test('describe renders metadata, nested spec, status and a conditions table', () => {
  const object = kafkaSource('orders-source', { labels: { team: 'a', app: 'shop' } })
  const status = object.status as Record<string, unknown>
  status['placements'] = [
    { podName: 'dispatcher-0', vreplicas: 1 },
    { podName: 'dispatcher-1', vreplicas: 1 }
  ]
  status['conditions'] = [
    { type: 'Ready', status: 'True', lastTransitionTime: '2024-05-01T12:00:00Z' },
    {
      type: 'SinkProvided',
      status: 'True',
      reason: 'Resolved',
      message: 'sink resolved',
      lastTransitionTime: '2024-05-01T12:00:01Z'
    }
  ]
  assert.equal(
    renderDescribe(object),
    `Name:         orders-source
Namespace:    default
Labels:       app=shop
              team=a
Annotations:  <none>
API Version:  sources.knative.dev/v1beta1
Kind:         KafkaSource
Metadata:
  Creation Timestamp:  2024-05-01T12:00:00Z
  Generation:          1
  Resource Version:    7
  UID:                 uid-orders-source
Spec:
  Bootstrap Servers:
    localhost:9092
  Consumers:  2
  Sink:
    URI:  http://sink.example/
  Topics:
    orders
Status:
  Observed Generation:  1
  Placements:
    - Pod Name:   dispatcher-0
      Vreplicas:  1
    - Pod Name:   dispatcher-1
      Vreplicas:  1
  Sink URI:       http://sink.example/
Conditions:
  Type          Status  Reason    Message        Last Transition
  ----          ------  ------    -------        ---------------
  Ready         True                             2024-05-01T12:00:00Z
  SinkProvided  True    Resolved  sink resolved  2024-05-01T12:00:01Z
`
  )
})

test('an object without status or conditions still describes', () => {
  const text = renderDescribe({ apiVersion: 'v1', kind: 'X', metadata: { name: 'x' } })
  assert.match(text, /^Status:\s+<none>$/m)
  assert.match(text, /^Conditions:\s+<none>$/m)
})

test('describe prints a source’s flow control as a table at the end of its status', () => {
  const object = kafkaSource('gated')
  const status = object.status as Record<string, unknown>
  status['consumers'] = 2
  status['flowControl'] = [
    {
      dispatcher: 'dispatcher-0',
      sink: 'http://127.0.0.1:40125',
      adaptive: false,
      limit: 2,
      inFlight: 2,
      queued: 14,
      latencyMs: 1804
    },
    { dispatcher: 'dispatcher-1', sink: 'http://127.0.0.1:40125', adaptive: true, limit: 5, inFlight: 0, queued: 0 }
  ]
  const text = renderDescribe(object)
  const table = `Status:
  Consumers:            2
  Observed Generation:  1
  Sink URI:             http://sink.example/
  Flow Control:
    Dispatcher    Sink                    Limit       In Flight  Queued  Latency
    ----------    ----                    -----       ---------  ------  -------
    dispatcher-0  http://127.0.0.1:40125  2           2          14      1804ms
    dispatcher-1  http://127.0.0.1:40125  adaptive 5  0          0       <none>
Conditions:
`
  assert.ok(text.includes(table), text)
})

test('a flowControl that is not a list of rows is described as any other field', () => {
  const object = kafkaSource('odd')
  ;(object.status as Record<string, unknown>)['flowControl'] = 'n/a'
  assert.match(renderDescribe(object), /^ {2}Flow Control: +n\/a$/m)
})

test('describe prints a source’s sink origins as a table after its flow control: the oldest request in flight as an age', () => {
  const object = kafkaSource('stalled')
  const status = object.status as Record<string, unknown>
  status['flowControl'] = [
    { dispatcher: 'dispatcher-0', sink: 'http://127.0.0.1:40125', adaptive: false, limit: 2, inFlight: 2, queued: 0 }
  ]
  status['sinkOrigins'] = [
    {
      dispatcher: 'dispatcher-0',
      origin: 'http://127.0.0.1:40125',
      inFlight: 2,
      oldestInFlightMs: 95_400,
      resent: 12,
      notAccepted: 9
    },
    {
      dispatcher: 'dispatcher-1',
      origin: 'http://127.0.0.1:40125',
      inFlight: 1,
      oldestInFlightMs: 40,
      resent: 0,
      notAccepted: 0
    },
    {
      dispatcher: 'dispatcher-2',
      origin: 'http://127.0.0.1:40125',
      inFlight: 0,
      oldestInFlightMs: 0,
      resent: 3,
      notAccepted: 0
    }
  ]
  const text = renderDescribe(object)
  const table = `Status:
  Observed Generation:  1
  Sink URI:             http://sink.example/
  Flow Control:
    Dispatcher    Sink                    Limit  In Flight  Queued  Latency
    ----------    ----                    -----  ---------  ------  -------
    dispatcher-0  http://127.0.0.1:40125  2      2          0       <none>
  Sink Origins:
    Dispatcher    Origin                  In Flight  Oldest  Resent  Not Accepted
    ----------    ------                  ---------  ------  ------  ------------
    dispatcher-0  http://127.0.0.1:40125  2          95s     12      9
    dispatcher-1  http://127.0.0.1:40125  1          40ms    0       0
    dispatcher-2  http://127.0.0.1:40125  0          <none>  3       0
Conditions:
`
  assert.ok(text.includes(table), text)
  // Without flow control, the sink origins are the only table.
  delete status['flowControl']
  assert.match(
    renderDescribe(object),
    /^ {2}Sink URI: +http:\/\/sink\.example\/\n {2}Sink Origins:\n {4}Dispatcher {4}Origin/m
  )
})
