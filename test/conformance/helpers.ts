// What the conformance suite shares: the independent producer (confluent-kafka, test/conformance/kafka_producer.py),
// the Python CloudEvents sink with what it saw (over https too), a throw-away CA and certificate, and a source's
// status.
import { execFile, execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { http } from '../helpers/http.ts'
import { brokers } from '../helpers/kafka.ts'
import { startPythonSink } from '../sinks/python-sink.ts'
import type { PythonSink } from '../sinks/python-sink.ts'

const producerScript = new URL('./kafka_producer.py', import.meta.url).pathname
const PYTHONPATH = join(process.env['SHOAL_CACHE_DIR'] ?? join(homedir(), '.cache', 'shoal'), 'python')

/** Where Knative's assertions were read: repository, release and commit. */
export const KNATIVE_EVENTING = 'knative/eventing knative-v1.22.0-20-g8cf4c4b67'
export const KNATIVE_KAFKA = 'knative-extensions/eventing-kafka-broker knative-v1.23.0-2-g7d8fe89f4'

export interface ProducedRecord {
  readonly partition?: number
  readonly key?: string
  /** A key that is not text: its bytes in base64 (wins over `key`). */
  readonly keyBase64?: string
  readonly value: string
  readonly headers?: Readonly<Record<string, string>>
}

/** Produces with confluent-kafka; resolves with each committed record's `[partition, offset]`, in order. */
export function producePython(
  topic: string,
  records: readonly ProducedRecord[],
  options: {
    transactionalId?: string
    aborted?: readonly ProducedRecord[]
    intervalMs?: number
    /** Another cluster than the test runner's, e.g. a SASL_SSL listener. */
    bootstrap?: string
    /** librdkafka settings, e.g. `security.protocol`, `sasl.mechanism`, `ssl.ca.pem`. */
    config?: Readonly<Record<string, string>>
  } = {}
): Promise<Array<[number, number]>> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      'python3',
      [producerScript],
      { env: { ...process.env, PYTHONPATH }, timeout: 120_000 },
      (error, stdout, stderr) => {
        if (error) return reject(new Error(`kafka_producer.py: ${error.message} ${stderr}`))
        resolve(
          stdout
            .trim()
            .split('\n')
            .filter(Boolean)
            .map(line => line.split('\t').map(Number) as [number, number])
        )
      }
    )
    child.stdin!.end(
      JSON.stringify({
        bootstrap: options.bootstrap ?? brokers().join(','),
        config: options.config ?? {},
        topic,
        transactionalId: options.transactionalId ?? null,
        intervalMs: options.intervalMs ?? 0,
        records,
        aborted: options.aborted ?? []
      })
    )
  })
}

/** An event as the Python sink's `--trace --trace-data` saw it arrive. */
export interface Arrived {
  readonly [attribute: string]: unknown
  readonly _data?: string | null
  readonly _headers?: Readonly<Record<string, string>>
}

export interface TracingSink {
  readonly url: string
  readonly arrived: Arrived[]
  stop(): Promise<void>
}

/**
 * The Python CloudEvents SDK sink, recording every event's attributes, extensions, data and headers; with `tls`,
 * over https (Python's own `ssl` module serving that certificate).
 */
export async function tracingSink(
  extra: readonly string[] = [],
  tls?: { readonly cert: string; readonly key: string }
): Promise<TracingSink> {
  const arrived: Arrived[] = []
  const dir = tls === undefined ? undefined : mkdtempSync(join(tmpdir(), 'shoal-conformance-sink-'))
  const tlsArgs: string[] = []
  if (dir !== undefined && tls !== undefined) {
    writeFileSync(join(dir, 'sink.crt'), tls.cert)
    writeFileSync(join(dir, 'sink.key'), tls.key, { mode: 0o600 })
    tlsArgs.push('--tls-cert', join(dir, 'sink.crt'), '--tls-key', join(dir, 'sink.key'))
  }
  const sink: PythonSink = await startPythonSink(['--trace', '--trace-data', ...tlsArgs, ...extra], line => {
    if (line.kind === 'arrived') arrived.push(line.attributes)
  })
  return {
    url: sink.url,
    arrived,
    async stop() {
      await sink.stop()
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
    }
  }
}

/** A CA and a certificate for 127.0.0.1 signed by it (a sink's or a broker's), made with openssl. */
export function certificates(): { ca: string; cert: string; key: string } {
  const dir = mkdtempSync(join(tmpdir(), 'shoal-conformance-'))
  const run = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' })
  writeFileSync(join(dir, 'san.cnf'), 'subjectAltName=IP:127.0.0.1\n')
  try {
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
      '/CN=conformance-ca'
    )
    run('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'sink.key', '-out', 'sink.csr', '-subj', '/CN=127.0.0.1')
    run(
      'x509',
      '-req',
      '-in',
      'sink.csr',
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      'sink.crt',
      '-days',
      '2',
      '-extfile',
      'san.cnf'
    )
    return {
      ca: readFileSync(join(dir, 'ca.crt'), 'utf8'),
      cert: readFileSync(join(dir, 'sink.crt'), 'utf8'),
      key: readFileSync(join(dir, 'sink.key'), 'utf8')
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** A source's status as the API shows it. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON under test
export async function statusOf(url: string): Promise<Record<string, any>> {
  const answer = await http('GET', url)
  if (answer.status !== 200) throw new Error(`GET ${url}: ${answer.status} ${JSON.stringify(answer.body)}`)
  return answer.body.status ?? {}
}

export function isReady(status: Record<string, unknown>): boolean {
  const conditions = (status['conditions'] ?? []) as Array<{ type: string; status: string }>
  return conditions.find(c => c.type === 'Ready')?.status === 'True'
}
