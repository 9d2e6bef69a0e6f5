// Knative's KafkaSource assertions on a cluster that wants SASL/SCRAM-SHA-512 over TLS: a second embedded broker with
// a SASL_SSL listener (as test/secrets/authenticated-kafka.test.ts starts one), the credentials and CA in Secrets
// made through Shoal's API, records produced by confluent-kafka over SASL_SSL and events received by the CloudEvents
// Python SDK. Shoal's own topics stay on the test runner's broker. docs/conformance.md has the table.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { ensureTopics } from '../../src/kafka/index.ts'
import { startEmbeddedKafka } from '../../src/kafka/embedded/index.ts'
import type { EmbeddedKafka } from '../../src/kafka/embedded/index.ts'
import { startControllerProcess } from '../helpers/controllers.ts'
import type { ControllerProcess } from '../helpers/controllers.ts'
import { startDispatcherProcess } from '../helpers/dispatchers.ts'
import type { DispatcherProcess } from '../helpers/dispatchers.ts'
import { http } from '../helpers/http.ts'
import { uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { certificates, isReady, producePython, statusOf, tracingSink } from './helpers.ts'
import type { ProducedRecord, TracingSink } from './helpers.ts'

const KS = '/apis/sources.knative.dev/v1/namespaces/default/kafkasources'
const SECRETS = '/api/v1/namespaces/default/secrets'
const FEATURES = 'eventing-kafka-broker test/rekt/features/kafka_source.go'
const SECRETS_AFTER = 'eventing-kafka-broker test/rekt/features/kafka_source_create_secrets_after.go'
const USER = 'conformance-source'
const PASSWORD = `scram-${randomBytes(9).toString('hex')}`

describe('Knative KafkaSource conformance with SASL_SSL brokers', () => {
  const dir = mkdtempSync(join(tmpdir(), 'shoal-conformance-auth-'))
  const prefix = uniqueName('conf-auth')
  const tls = certificates()
  let kafka: EmbeddedKafka
  let controller: ControllerProcess
  let dispatcher: DispatcherProcess
  let sink: TracingSink

  before(async () => {
    kafka = await startEmbeddedKafka({
      saslSsl: {
        users: [{ username: USER, password: PASSWORD }],
        certificate: tls.cert,
        privateKey: tls.key,
        // A TLS listener that wants a client certificate the same CA signed (KafkaSourceTLS).
        clientCa: tls.ca
      }
    })
    sink = await tracingSink()
    const secretKey = randomBytes(32).toString('base64')
    writeFileSync(join(dir, 'secret.key'), `${secretKey}\n`, { mode: 0o600 })
    controller = await startControllerProcess(prefix, ['--secret-key-file', join(dir, 'secret.key')])
    dispatcher = await startDispatcherProcess(prefix, 'dispatcher-0', 'a', 'a-1', 8, [], {
      env: { SHOAL_SECRET_KEY: secretKey }
    })
  })
  after(async () => {
    await dispatcher?.stop()
    await controller?.stop()
    await sink?.stop()
    await kafka?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  async function topicOnSecuredCluster(label: string): Promise<string> {
    const topic = `${prefix}-${label}`
    await ensureTopics({ brokers: kafka.bootstrapBrokers, clientId: prefix }, [
      { name: topic, partitions: 1, configs: {} }
    ])
    return topic
  }

  /** Knative's test Secrets: the SASL one (`user`, `password`, `sasl.mechanism`, `ca.crt`) or the TLS one (`ca.crt`). */
  async function createSecret(name: string, kind: 'sasl' | 'tls'): Promise<void> {
    const lines = ['apiVersion: v1', 'kind: Secret', `metadata: {name: ${name}}`]
    if (kind === 'sasl') {
      lines.push('stringData:', `  user: ${USER}`, `  password: ${PASSWORD}`, '  sasl.mechanism: SCRAM-SHA-512')
    }
    lines.push('data:', `  ca.crt: ${Buffer.from(tls.ca).toString('base64')}`, '')
    const created = await http('POST', `${controller.url}${SECRETS}`, lines.join('\n'))
    assert.equal(created.status, 201, JSON.stringify(created.body))
  }

  /** A KafkaSource as Knative writes it, on the brokers at `bootstrap`, with `net` (its YAML lines under `net:`). */
  async function createSource(name: string, topic: string, bootstrap: string, net: readonly string[]): Promise<string> {
    const manifest = [
      'apiVersion: sources.knative.dev/v1',
      'kind: KafkaSource',
      `metadata: {name: ${name}}`,
      'spec:',
      `  bootstrapServers: [${bootstrap}]`,
      `  topics: [${topic}]`,
      `  consumerGroup: ${topic}-group`,
      // A fresh topic read from its start: the record produced once the source is Ready is delivered whenever its
      // consumer takes its partition (the TLS handshake is not hurried by a race with `latest`).
      '  initialOffset: earliest',
      '  net:',
      ...net.map(line => `    ${line}`),
      `  sink: {uri: "${sink.url}"}`,
      ''
    ].join('\n')
    const created = await http('POST', `${controller.url}${KS}`, manifest)
    assert.equal(created.status, 201, JSON.stringify(created.body))
    return `${controller.url}${KS}/${name}`
  }

  /** A source on the SASL_SSL listener, SASL values from `saslSecret` and the CA from `tlsSecret`. */
  function createSaslSource(name: string, topic: string, saslSecret: string, tlsSecret: string): Promise<string> {
    return createSource(name, topic, kafka.saslSslBootstrap!, [
      'sasl:',
      '  enable: true',
      `  user: {secretKeyRef: {name: ${saslSecret}, key: user}}`,
      `  password: {secretKeyRef: {name: ${saslSecret}, key: password}}`,
      `  type: {secretKeyRef: {name: ${saslSecret}, key: sasl.mechanism}}`,
      'tls:',
      '  enable: true',
      `  caCert: {secretKeyRef: {name: ${tlsSecret}, key: ca.crt}}`
    ])
  }

  /** Knative's `cetest.FullEvent()` shape in Kafka's binary content mode, produced by librdkafka over SASL_SSL. */
  async function produceEvent(topic: string, id: string): Promise<void> {
    const record: ProducedRecord = {
      value: '{"hello":"world"}',
      headers: {
        ce_specversion: '1.0',
        ce_type: 'com.example.FullEvent',
        ce_source: 'http://example.com/source',
        ce_subject: 'full-event',
        ce_id: id,
        'content-type': 'application/json'
      }
    }
    await producePython(topic, [record], {
      bootstrap: kafka.saslSslBootstrap!,
      config: {
        'security.protocol': 'SASL_SSL',
        'sasl.mechanism': 'SCRAM-SHA-512',
        'sasl.username': USER,
        'sasl.password': PASSWORD,
        'ssl.ca.pem': tls.ca
      }
    })
  }

  it(`KafkaSourceSASL: "eventshub receiver gets event" matching HasData and HasId — SCRAM-SHA-512 over TLS, credentials in a Secret (${FEATURES})`, async () => {
    const topic = await topicOnSecuredCluster('sasl')
    const secret = uniqueName('sasl-secret').toLowerCase()
    await createSecret(secret, 'sasl')
    const url = await createSaslSource(uniqueName('sasl').toLowerCase(), topic, secret, secret)
    await eventually(async () => isReady(await statusOf(url)), 90_000, 'the SASL source Ready')
    const id = uniqueName('sasl-id')
    await produceEvent(topic, id)
    const e = await eventually(() => sink.arrived.find(x => x['id'] === id), 60_000, `event ${id}`)
    assert.equal(e._data, '{"hello":"world"}')
    assert.equal(e['type'], 'com.example.FullEvent')
  })

  it(`KafkaSourceTLS: "eventshub receiver gets event" matching HasData and HasId — TLS with a client certificate, CA, certificate and key in a Secret (${FEATURES})`, async () => {
    const topic = await topicOnSecuredCluster('mtls')
    const secret = uniqueName('tls-secret').toLowerCase()
    // Knative's test Secret: `ca.crt`, `user.crt`, `user.key`. The client's certificate is signed by the CA the
    // listener trusts (here the brokers' own pair, which that CA signed).
    const lines = ['apiVersion: v1', 'kind: Secret', `metadata: {name: ${secret}}`, 'data:']
    for (const [key, pem] of [
      ['ca.crt', tls.ca],
      ['user.crt', tls.cert],
      ['user.key', tls.key]
    ] as const) {
      lines.push(`  ${key}: ${Buffer.from(pem).toString('base64')}`)
    }
    const created = await http('POST', `${controller.url}${SECRETS}`, `${lines.join('\n')}\n`)
    assert.equal(created.status, 201, JSON.stringify(created.body))
    const url = await createSource(uniqueName('mtls').toLowerCase(), topic, kafka.mutualTlsBootstrap!, [
      'tls:',
      '  enable: true',
      `  caCert: {secretKeyRef: {name: ${secret}, key: ca.crt}}`,
      `  cert: {secretKeyRef: {name: ${secret}, key: user.crt}}`,
      `  key: {secretKeyRef: {name: ${secret}, key: user.key}}`
    ])
    await eventually(async () => isReady(await statusOf(url)), 90_000, 'the mutual-TLS source Ready')
    const id = uniqueName('mtls-id')
    await produceEvent(topic, id)
    const e = await eventually(() => sink.arrived.find(x => x['id'] === id), 60_000, `event ${id}`)
    assert.equal(e._data, '{"hello":"world"}')
    assert.equal(e['type'], 'com.example.FullEvent')
  })

  it(`CreateSecretsAfterKafkaSource: "KafkaSource is not ready", then after the TLS and SASL Secrets are created "KafkaSource is ready" — and it delivers (${SECRETS_AFTER})`, async () => {
    const topic = await topicOnSecuredCluster('secrets-after')
    const saslSecret = uniqueName('sasl-after').toLowerCase()
    const tlsSecret = uniqueName('tls-after').toLowerCase()
    const url = await createSaslSource(uniqueName('secrets-after').toLowerCase(), topic, saslSecret, tlsSecret)
    // Not ready, and saying why: the Secret it names does not exist (not merely not reconciled yet).
    const waiting = await eventually(
      async () => {
        const status = await statusOf(url)
        const conditions = (status['conditions'] ?? []) as Array<{ type: string; status: string; reason?: string }>
        return conditions.find(c => c.type === 'InitialOffsetsCommitted' && c.status === 'False') ? status : undefined
      },
      60_000,
      'the source waiting for its Secrets'
    )
    assert.equal(isReady(waiting), false)
    const cause = (waiting['conditions'] as Array<{ type: string; reason?: string }>).find(
      c => c.type === 'InitialOffsetsCommitted'
    )
    assert.equal(cause?.reason, 'NetSecretNotResolved')
    await createSecret(tlsSecret, 'tls')
    await createSecret(saslSecret, 'sasl')
    await eventually(async () => isReady(await statusOf(url)), 90_000, 'the source Ready once its Secrets exist')
    const id = uniqueName('after-id')
    await produceEvent(topic, id)
    const e = await eventually(() => sink.arrived.find(x => x['id'] === id), 60_000, `event ${id}`)
    assert.equal(e._data, '{"hello":"world"}')
  })
})
