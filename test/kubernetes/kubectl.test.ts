import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { after, before, describe, it } from 'node:test'
import { RecordingProducer } from '../autoscale/harness.ts'
import { brokers, createTopic, uniqueName } from '../helpers/kafka.ts'
import { startApiServer } from '../helpers/kube-apiserver.ts'
import type { ApiServer } from '../helpers/kube-apiserver.ts'
import { eventually } from '../helpers/wait.ts'
import { startOperatorRig } from './rig.ts'
import type { OperatorRig } from './rig.ts'

// What a Knative user types, with kubectl itself (built from the same release as the API server): Knative's docs
// KafkaSource applied, waited on, listed, scaled and deleted. kubectl's own output and exit codes are the judges.

let api: ApiServer
let rig: OperatorRig
const producer = new RecordingProducer()

function kubectl(args: readonly string[], input?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise(resolve => {
    const child = execFile(api.kubectl, ['--kubeconfig', api.kubeconfig, ...args], (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr })
    )
    if (input !== undefined) child.stdin?.end(input)
  })
}

async function ok(args: readonly string[], input?: string): Promise<string> {
  const answer = await kubectl(args, input)
  assert.equal(answer.code, 0, `kubectl ${args.join(' ')}: ${answer.stderr}`)
  return answer.stdout
}

before(async () => {
  api = await startApiServer()
  rig = await startOperatorRig(api)
})

after(async () => {
  await producer.close()
  await rig?.stop()
  await api?.stop()
})

describe('kubectl against Shoal in operator mode', { timeout: 300_000 }, () => {
  it("applies Knative's docs KafkaSource, waits for Ready, lists it with READY and REASON, scales it and deletes it", async () => {
    const ns = uniqueName('team')
      .toLowerCase()
      .replace(/[^a-z0-9-]/g, '-')
      .slice(0, 40)
    const topic = uniqueName('kubectl-topic')
    await createTopic(topic, { partitions: 2 })
    await ok(['create', 'namespace', ns])
    await ok(['label', 'namespace', ns, 'sources.shoal.dev/controller=shoal'])
    // Knative's docs KafkaSource, its brokers and topic the test's own.
    const manifest = [
      'apiVersion: sources.knative.dev/v1beta1',
      'kind: KafkaSource',
      'metadata:',
      '  name: kafka-source',
      'spec:',
      '  consumerGroup: knative-group',
      '  bootstrapServers:',
      `  - ${brokers()[0]}`,
      '  topics:',
      `  - ${topic}`,
      '  sink:',
      '    ref:',
      '      apiVersion: serving.knative.dev/v1',
      '      kind: Service',
      '      name: event-display',
      ''
    ].join('\n')
    assert.match(
      await ok(['apply', '-n', ns, '-f', '-'], manifest),
      /kafkasource\.sources\.knative\.dev\/kafka-source created/
    )
    await ok(['wait', '-n', ns, '--for=condition=Ready', 'kafkasource/kafka-source', '--timeout=120s'])

    const listed = await ok(['get', 'kafkasources,pingsources', '-A'])
    const [header, ...rows] = listed.trim().split('\n')
    assert.match(header ?? '', /NAMESPACE\s+NAME\s+TOPICS\s+BOOTSTRAPSERVERS\s+READY\s+REASON\s+AGE/)
    const row = rows.find(r => r.startsWith(ns))
    assert.match(row ?? '', /kafka-source\s+\[".*"\]\s+\[".*"\]\s+True\s/)

    const produced = await producer.produce(topic, 2, 10)
    const ids = () => new Set(rig.at(`/${ns}/event-display`).map(a => a.id))
    await eventually(() => produced.every(id => ids().has(id)), 60_000, 'the records at the sink')

    await ok(['scale', '-n', ns, 'kafkasource/kafka-source', '--replicas=2'])
    await ok(['wait', '-n', ns, '--for=jsonpath={.status.consumers}=2', 'kafkasource/kafka-source', '--timeout=120s'])
    await ok([
      'wait',
      '-n',
      ns,
      '--for=jsonpath={.status.observedGeneration}=2',
      'kafkasource/kafka-source',
      '--timeout=60s'
    ])

    // kubectl delete waits until the object is gone: until Shoal let go of its finalizer.
    assert.match(await ok(['delete', '-n', ns, 'kafkasource/kafka-source', '--timeout=120s']), /deleted/)
    const gone = await kubectl(['get', '-n', ns, 'kafkasource/kafka-source'])
    assert.notEqual(gone.code, 0)
    assert.match(gone.stderr, /NotFound/)
  })
})
