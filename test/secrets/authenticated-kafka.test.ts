// A KafkaSource that reaches its brokers with SASL/SCRAM-SHA-512 over TLS, its credentials and CA in a Secret,
// on a real embedded broker with a SASL_SSL listener; and the password nowhere: not in any API answer, log
// line, status, contract or other record of Shoal's topics. The controller's own clients of the source's cluster
// use the Secret too: an autoscaled source at 0 wakes on a record, and `shoal offsets` reads its group.
import assert from 'node:assert/strict'
import { execFile, execFileSync, spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { Admin, Consumer, Producer } from '@platformatic/kafka'
import { IsolationLevels, ensureTopics } from '../../src/kafka/index.ts'
import { startEmbeddedKafka } from '../../src/kafka/embedded/index.ts'
import type { EmbeddedKafka } from '../../src/kafka/embedded/index.ts'
import { http } from '../helpers/http.ts'
import { uniqueName } from '../helpers/kafka.ts'
import { shoalBin } from '../helpers/processes.ts'
import { eventually } from '../helpers/wait.ts'

const PASSWORD = `scram-${randomBytes(9).toString('hex')}`
const WRONG = `wrong-${randomBytes(9).toString('hex')}`
const USER = 'shoal-source'
// Every form of the password a leak could take: clear, base64 (as `data` holds it), hex.
const FORBIDDEN = [PASSWORD, Buffer.from(PASSWORD).toString('base64'), Buffer.from(PASSWORD).toString('hex')]

function assertNoPassword(what: string, text: string): void {
  for (const form of FORBIDDEN) assert.ok(!text.includes(form), `${what} carries the password (${form.slice(0, 6)}…)`)
}

/** A CA and a broker certificate for 127.0.0.1, made with openssl. */
function certificates(dir: string): { ca: string; cert: string; key: string } {
  const run = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' })
  run(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-days',
    '2',
    '-subj',
    '/CN=shoal-test-ca'
  )
  run('genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', 'broker.key')
  run('req', '-new', '-key', 'broker.key', '-out', 'broker.csr', '-subj', '/CN=127.0.0.1')
  writeFileSync(join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n')
  run(
    'x509',
    '-req',
    '-in',
    'broker.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'broker.crt',
    '-days',
    '2',
    '-extfile',
    'san.ext'
  )
  const read = (name: string) => readFileSync(join(dir, name), 'utf8')
  return { ca: read('ca.crt'), cert: read('broker.crt'), key: read('broker.key') }
}

interface Proc {
  readonly child: ChildProcess
  output: string
  stop(): Promise<void>
}

/** Starts `shoal …` with info logs, keeping everything it prints; resolves once a line matches `ready`. */
async function startShoal(
  args: string[],
  env: NodeJS.ProcessEnv,
  ready: RegExp
): Promise<Proc & { match: RegExpExecArray }> {
  const child = spawn(process.execPath, [shoalBin, ...args], {
    env: { ...process.env, SHOAL_LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const proc = {
    child,
    output: '',
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return
      const exited = once(child, 'exit')
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000)
      await exited
      clearTimeout(timer)
    }
  }
  const match = await new Promise<RegExpExecArray>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`shoal ${args[0]} did not start: ${proc.output}`)), 90_000)
    const onData = (chunk: Buffer) => {
      proc.output += chunk.toString('utf8')
      const found = ready.exec(proc.output)
      if (found) {
        clearTimeout(timer)
        resolve(found)
      }
    }
    child.stdout.on('data', onData)
    child.stderr.on('data', onData)
    child.once('exit', code => {
      clearTimeout(timer)
      reject(new Error(`shoal ${args[0]} exited with ${code}: ${proc.output}`))
    })
  })
  return {
    ...proc,
    match,
    get output() {
      return proc.output
    }
  }
}

describe('a KafkaSource over SASL_SSL with its credentials in a Secret', () => {
  const dir = mkdtempSync(join(tmpdir(), 'shoal-secrets-'))
  const prefix = uniqueName('secrets')
  const topic = `${prefix}-events`
  const wakeTopic = `${prefix}-wake`
  let kafka: EmbeddedKafka
  let controller: Proc & { match: RegExpExecArray }
  let dispatcher: Proc
  let api = ''
  let sinkUrl = ''
  const received: string[] = []
  const sink = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', c => chunks.push(c as Buffer))
    req.on('end', () => {
      received.push(Buffer.concat(chunks).toString('utf8'))
      res.writeHead(202).end()
    })
  })
  let ca = ''

  before(async () => {
    const pem = certificates(dir)
    ca = pem.ca
    kafka = await startEmbeddedKafka({
      saslSsl: { users: [{ username: USER, password: PASSWORD }], certificate: pem.cert, privateKey: pem.key }
    })
    await ensureTopics({ brokers: kafka.bootstrapBrokers, clientId: prefix }, [
      { name: topic, partitions: 2, configs: {} },
      { name: wakeTopic, partitions: 2, configs: {} }
    ])
    sink.listen(0, '127.0.0.1')
    await once(sink, 'listening')
    sinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}/events`
    const keyFile = join(dir, 'secret.key')
    const keyText = randomBytes(32).toString('base64')
    writeFileSync(keyFile, `${keyText}\n`)
    // The controller reads its key from a file, the dispatcher from the environment: both ways work.
    controller = await startShoal(
      [
        'controller',
        '--kafka',
        kafka.bootstrap,
        '--port',
        '0',
        '--prefix',
        prefix,
        '--buckets',
        '2',
        '--secret-key-file',
        keyFile
      ],
      {},
      /serving the API on (\S+)/
    )
    api = controller.match[1]!
    dispatcher = await startShoal(
      [
        'dispatcher',
        '--kafka',
        kafka.bootstrap,
        '--prefix',
        prefix,
        '--id',
        'dispatcher-0',
        '--zone',
        'z',
        '--node',
        'n',
        '--capacity',
        '8'
      ],
      { SHOAL_SECRET_KEY: keyText },
      / up\b/
    )
  })

  after(async () => {
    await dispatcher?.stop()
    await controller?.stop()
    sink.close()
    await kafka?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  const SECRETS = '/api/v1/namespaces/default/secrets'
  const SOURCES = '/apis/sources.knative.dev/v1beta1/namespaces/default/kafkasources'
  const answers: string[] = []
  const call = async (method: string, path: string, body?: string) => {
    const answer = await http(method, `${api}${path}`, body)
    answers.push(`${method} ${path} → ${JSON.stringify(answer.body)}`)
    return answer
  }
  const secretYaml = (name: string, password: string) =>
    [
      'apiVersion: v1',
      'kind: Secret',
      `metadata: {name: ${name}}`,
      'stringData:',
      `  user: ${USER}`,
      `  password: ${password}`,
      '  saslType: SCRAM-SHA-512',
      'data:',
      `  ca.crt: ${Buffer.from(ca).toString('base64')}`,
      ''
    ].join('\n')
  // Scale to 0 when idle, and a record wakes it (the autoscaler reads the lag).
  const AUTOSCALED = [
    '  annotations:',
    '    autoscaling.eventing.knative.dev/class: keda.autoscaling.knative.dev',
    '    autoscaling.eventing.knative.dev/lag-threshold: "10"'
  ]
  const sourceYaml = (name: string, secret: string, autoscaled = false) =>
    [
      'apiVersion: sources.knative.dev/v1beta1',
      'kind: KafkaSource',
      'metadata:',
      `  name: ${name}`,
      ...(autoscaled ? AUTOSCALED : []),
      'spec:',
      `  bootstrapServers: [${kafka.saslSslBootstrap}]`,
      `  topics: [${autoscaled ? wakeTopic : topic}]`,
      '  initialOffset: earliest',
      '  net:',
      '    sasl:',
      '      enable: true',
      `      user: {secretKeyRef: {name: ${secret}, key: user}}`,
      `      password: {secretKeyRef: {name: ${secret}, key: password}}`,
      `      type: {secretKeyRef: {name: ${secret}, key: saslType}}`,
      '    tls:',
      '      enable: true',
      `      caCert: {secretKeyRef: {name: ${secret}, key: ca.crt}}`,
      `  sink: {uri: "${sinkUrl}"}`,
      ''
    ].join('\n')
  const condition = (source: { status?: { conditions?: Array<{ type: string }> } }, type: string) =>
    source.status?.conditions?.find(c => c.type === type) as
      { status: string; reason?: string; message?: string } | undefined

  it('delivers records read with SCRAM-SHA-512 over TLS to the sink', async () => {
    const created = await call('POST', SECRETS, secretYaml('kafka-creds', PASSWORD))
    assert.equal(created.status, 201, JSON.stringify(created.body))
    assert.deepEqual(created.body.keys, ['ca.crt', 'password', 'saslType', 'user'])
    assert.equal(created.body.data, undefined)
    const source = await call('POST', SOURCES, sourceYaml('secured', 'kafka-creds'))
    assert.equal(source.status, 201, JSON.stringify(source.body))
    await eventually(
      async () => {
        const got = await call('GET', `${SOURCES}/secured`)
        return condition(got.body, 'Ready')?.status === 'True' ? true : undefined
      },
      90_000,
      'the secured source Ready (initial offsets committed over SASL_SSL)'
    )
    const producer = new Producer({ clientId: prefix, bootstrapBrokers: [...kafka.bootstrapBrokers], idempotent: true })
    await producer.send({
      acks: -1,
      messages: ['one', 'two', 'three'].map(v => ({ topic, key: Buffer.from(v), value: Buffer.from(`value-${v}`) }))
    })
    await producer.close()
    await eventually(async () => (received.length >= 3 ? true : undefined), 90_000, 'three events at the sink')
    assert.deepEqual(received.slice(0, 3).sort(), ['value-one', 'value-three', 'value-two'])
  })

  it('reports a wrong password, and a missing Secret, as conditions naming the cause', async () => {
    assert.equal((await call('POST', SECRETS, secretYaml('wrong-creds', WRONG))).status, 201)
    assert.equal((await call('POST', SOURCES, sourceYaml('wrong', 'wrong-creds'))).status, 201)
    assert.equal((await call('POST', SOURCES, sourceYaml('missing', 'no-such-secret'))).status, 201)
    const wrong = await eventually(
      async () => {
        const c = condition((await call('GET', `${SOURCES}/wrong`)).body, 'InitialOffsetsCommitted')
        return c?.status === 'False' ? c : undefined
      },
      90_000,
      'the wrong password reported'
    )
    assert.match(wrong.message ?? '', /authentication to the brokers failed/)
    const missing = await eventually(
      async () => {
        const c = condition((await call('GET', `${SOURCES}/missing`)).body, 'InitialOffsetsCommitted')
        return c?.status === 'False' ? c : undefined
      },
      90_000,
      'the missing secret reported'
    )
    assert.equal(missing.reason, 'NetSecretNotResolved')
    assert.match(missing.message ?? '', /^spec\.net\.sasl\.user\.secretKeyRef: secret "no-such-secret" not found/)
    const ready = condition((await call('GET', `${SOURCES}/wrong`)).body, 'Ready')
    assert.equal(ready?.status, 'False')
  })

  it('wakes an autoscaled source at 0 on the SASL_SSL listener, and reads its offsets there', async () => {
    const cli = (...args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>(resolve => {
        execFile(process.execPath, [shoalBin, ...args, '--server', api], (error, stdout, stderr) => {
          resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr })
        })
      })
    assert.equal((await call('POST', SOURCES, sourceYaml('sleeper', 'kafka-creds', true))).status, 201)
    await eventually(
      async () => {
        const got = (await call('GET', `${SOURCES}/sleeper`)).body
        return condition(got, 'Ready')?.status === 'True' && got.status?.desiredConsumers === 0 ? true : undefined
      },
      90_000,
      'the autoscaled source Ready at 0 vreplicas'
    )
    const producer = new Producer({ clientId: prefix, bootstrapBrokers: [...kafka.bootstrapBrokers], idempotent: true })
    await producer.send({
      acks: -1,
      messages: [{ topic: wakeTopic, key: Buffer.from('w'), value: Buffer.from('wake') }]
    })
    await producer.close()
    await eventually(
      async () => (received.includes('wake') ? true : undefined),
      90_000,
      'the waking record at the sink'
    )
    const woken = (await call('GET', `${SOURCES}/sleeper`)).body
    assert.equal(woken.status?.scaledBy, 'autoscaler')
    // `shoal offsets` reads the group over SASL_SSL: the record is counted at the end and committed.
    const offsets = await eventually(
      async () => {
        const run = await cli('offsets', 'kafkasource', 'sleeper', '-o', 'json')
        assert.equal(run.code, 0, run.stderr)
        const view = JSON.parse(run.stdout) as {
          totalLag: number
          partitions: Array<{ committed: string | null; lastStable: string }>
        }
        return view.totalLag === 0 && view.partitions.every(p => p.committed !== null) ? view : undefined
      },
      90_000,
      'the committed offsets at the end'
    )
    assert.equal(offsets.partitions.length, 2)
    assert.equal(
      offsets.partitions.reduce((n, p) => n + Number(p.lastStable), 0),
      1
    )

    // A Secret that is missing: the autoscaler holds, naming the field; `shoal offsets` refuses, naming it too.
    assert.equal((await call('POST', SOURCES, sourceYaml('sleeper-missing', 'no-such-secret', true))).status, 201)
    const held = await eventually(
      async () => {
        const c = condition((await call('GET', `${SOURCES}/sleeper-missing`)).body, 'Autoscaled')
        return c?.status === 'False' ? c : undefined
      },
      90_000,
      'the autoscaler holding the source whose Secret is missing'
    )
    assert.match(held.message ?? '', /spec\.net\.sasl\.user\.secretKeyRef: secret "no-such-secret" not found/)
    const refused = await cli('offsets', 'kafkasource', 'sleeper-missing')
    assert.notEqual(refused.code, 0)
    assert.match(refused.stderr, /spec\.net\.sasl\.user\.secretKeyRef: secret "no-such-secret" not found/)
    answers.push(refused.stdout, refused.stderr, JSON.stringify(held))
  })

  it('keeps the password out of every answer, log line, status, contract and record', async () => {
    for (const path of [
      `${SECRETS}/kafka-creds`,
      SECRETS,
      '/api/v1/secrets',
      SOURCES,
      `${SOURCES}/secured`,
      '/apis/sources.knative.dev/v1beta1/kafkasources'
    ]) {
      const answer = await call('GET', path)
      assert.equal(answer.status, 200, path)
    }
    const cli = (...args: string[]) =>
      execFileSync(process.execPath, [shoalBin, ...args, '--server', api], { encoding: 'utf8', stdio: 'pipe' })
    const shown = [
      cli('get', 'secret', 'kafka-creds', '-o', 'yaml'),
      cli('get', 'secrets', '-o', 'json'),
      cli('get', 'kafkasource', 'secured', '-o', 'yaml'),
      cli('describe', 'kafkasource', 'secured'),
      cli('describe', 'secret', 'kafka-creds')
    ]
    assert.match(shown[0]!, /password/, 'the key names are shown')
    for (const text of [...answers, ...shown]) assertNoPassword('an API answer', text)
    // Applying a shown Secret again is refused: it holds no values.
    // (retried on a reset: the CLI calls above outlast the server's keep-alive, and fetch may reuse a closed socket)
    const reapplied = await eventually(
      () => http('PUT', `${api}${SECRETS}/kafka-creds`, shown[0], 'application/yaml'),
      30_000,
      'an answer to the re-apply'
    )
    assert.equal(reapplied.status, 422)

    // Every record of every Shoal topic, raw: resources (sealed), status, placements, contracts, members, errors.
    const admin = new Admin({ clientId: `${prefix}-audit`, bootstrapBrokers: [...kafka.bootstrapBrokers] })
    const topics = (await admin.listTopics()).filter(t => t.startsWith(`${prefix}.`))
    await admin.close()
    assert.ok(topics.includes(`${prefix}.contracts`) && topics.includes(`${prefix}.status`), topics.join(','))
    const consumer = new Consumer({
      clientId: `${prefix}-audit`,
      groupId: `${prefix}-audit`,
      bootstrapBrokers: [...kafka.bootstrapBrokers]
    })
    // Read to the end every partition had when the audit began (past any transaction marker), however long joining
    // and fetching take on a busy machine; not for a fixed time, which a slow start could spend reading nothing.
    const ends = await consumer.listOffsets({ topics, isolationLevel: IsolationLevels.READ_UNCOMMITTED })
    const stream = await consumer.consume({ topics, mode: 'earliest', maxWaitTime: 200, autocommit: false })
    let bytes = 0
    let contracts = 0
    const caughtUp = () =>
      stream.readableLength === 0 &&
      [...ends].every(([name, offsets]) =>
        offsets.every((end, partition) => end <= 0n || (stream.offsetsToFetch.get(`${name}:${partition}`) ?? 0n) >= end)
      )
    const deadline = Date.now() + 90_000
    let timedOut = false
    const idle = setInterval(() => {
      if (caughtUp()) void stream.close()
      else if (Date.now() > deadline) {
        timedOut = true
        void stream.close()
      }
    }, 200)
    for await (const message of stream) {
      const raw = Buffer.concat([message.key ?? Buffer.alloc(0), message.value ?? Buffer.alloc(0)])
      bytes += raw.length
      if (message.topic.endsWith('.contracts')) contracts++
      for (const form of FORBIDDEN) assert.ok(!raw.includes(form), `a record of ${message.topic} carries the password`)
    }
    clearInterval(idle)
    await consumer.close(true)
    assert.equal(timedOut, false, 'every Shoal topic read to its end')
    assert.ok(contracts > 0, 'the contracts topic was read')
    assert.ok(bytes > 0)

    assertNoPassword('the controller log', controller.output)
    assertNoPassword('the dispatcher log', dispatcher.output)
    assert.match(controller.output, /controller ready/, 'the log was captured')
  })

  it('refuses a Secret on a controller without a secret key', async () => {
    const keyless = await startShoal(
      ['controller', '--kafka', kafka.bootstrap, '--port', '0', '--prefix', `${prefix}-keyless`, '--buckets', '1'],
      { SHOAL_SECRET_KEY: '' },
      /serving the API on (\S+)/
    )
    try {
      const url = keyless.match[1]!
      const refused = await eventually(
        async () => {
          const answer = await http('POST', `${url}${SECRETS}`, secretYaml('kafka-creds', PASSWORD))
          return answer.status === 503 ? undefined : answer
        },
        60_000,
        'the keyless controller ready'
      )
      assert.equal(refused.status, 501)
      assert.match(refused.body.message, /no secret key/)
      assertNoPassword('the refusal', JSON.stringify(refused.body))
    } finally {
      await keyless.stop()
    }
  })
})
