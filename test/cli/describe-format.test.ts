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
