// What the tenant and fuzz tests share: a tokens file, calls with a token, and the store's end offsets
// (to show that refused requests appended nothing).
import { Consumer } from '@platformatic/kafka'
import { IsolationLevels } from '../../src/kafka/index.ts'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { brokers } from '../helpers/kafka.ts'

export const tokens = {
  internal: 'internal-token-0123456789abcdef',
  admin: 'admin-token-0123456789abcdef',
  teamA: 'team-a-token-0123456789abcdef',
  teamB: 'team-b-token-0123456789abcdef',
  slow: 'slow-token-0123456789abcdef'
} as const

/** Writes a tokens file: an admin, team-a (namespaces team-a, team-a-dev), team-b, and a token limited to a burst of 2. */
export function writeTokensFile(directory: string): string {
  const path = join(directory, 'tokens.yaml')
  writeFileSync(
    path,
    `# test tokens
internalToken: ${tokens.internal}
tokens:
  - name: ops
    token: ${tokens.admin}
    admin: true
  - name: team-a
    token: ${tokens.teamA}
    namespaces: [team-a, team-a-dev]
  - name: team-b
    token: ${tokens.teamB}
    namespaces: [team-b]
  - name: slow
    token: ${tokens.slow}
    namespaces: [slow]
    rateLimit: { requestsPerSecond: 0.01, burst: 2 }
`
  )
  return path
}

export interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly body: any // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON under test
}

/** One API call with an optional bearer token; the body is sent as given (string) or as JSON. */
export async function call(
  method: string,
  url: string,
  token: string | undefined,
  body?: unknown,
  headers: Record<string, string> = {}
): Promise<Answer> {
  const response = await fetch(url, {
    method,
    headers: {
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
      ...(body === undefined
        ? {}
        : { 'content-type': typeof body === 'string' ? 'application/yaml' : 'application/json' }),
      ...headers
    },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) })
  })
  const text = await response.text()
  let parsed: unknown = text
  try {
    parsed = JSON.parse(text)
  } catch {
    // a plain-text answer
  }
  return { status: response.status, headers: response.headers, body: parsed }
}

/** The end offset of every partition of the installation's resources topic, as one string to compare. */
export async function storeEnd(prefix: string): Promise<string> {
  const consumer = new Consumer({
    clientId: 'shoal-test-store-end',
    bootstrapBrokers: brokers(),
    groupId: 'shoal-test-store-end-unused'
  })
  try {
    // The end once no transaction is open: an accepted write's commit marker lands just after its answer, so the
    // high watermark alone could still move by one; equal to the last stable offset, it cannot.
    const topic = `${prefix}.resources`
    for (let attempt = 0; ; attempt++) {
      const [ends, stable] = await Promise.all([
        consumer.listOffsets({ topics: [topic], isolationLevel: IsolationLevels.READ_UNCOMMITTED }),
        consumer.listOffsets({ topics: [topic], isolationLevel: IsolationLevels.READ_COMMITTED })
      ])
      const end = (ends.get(topic) ?? []).join(',')
      if (end === (stable.get(topic) ?? []).join(',') || attempt >= 100) return end
      await new Promise(resolve => setTimeout(resolve, 100))
    }
  } finally {
    await consumer.close(true)
  }
}

export function kafkaSource(namespace: string, name: string, spec: Record<string, unknown> = {}): object {
  return {
    apiVersion: 'sources.knative.dev/v1beta1',
    kind: 'KafkaSource',
    metadata: { name, namespace },
    spec: { bootstrapServers: ['kafka:9092'], topics: ['orders'], sink: { uri: 'http://sink.example/' }, ...spec }
  }
}

export function ksPath(base: string, namespace?: string, name?: string): string {
  const ns = namespace === undefined ? '' : `/namespaces/${namespace}`
  return `${base}/apis/sources.knative.dev/v1beta1${ns}/kafkasources${name === undefined ? '' : `/${name}`}`
}
