// What the autoscaling and operating tests share: a sink that counts CloudEvent ids, a producer that remembers the
// ids it produced, the CLI as a real process, and a source's presented state.
import { execFile } from 'node:child_process'
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Producer } from '@platformatic/kafka'
import { http } from '../helpers/http.ts'
import { brokers } from '../helpers/kafka.ts'
import { shoalBin } from '../helpers/processes.ts'

export const KS = '/apis/sources.knative.dev/v1beta1/namespaces/default/kafkasources'

export interface CountingSink {
  readonly url: string
  /** Deliveries per ce-id. */
  readonly seen: Map<string, number>
  /** ce-ids in arrival order. */
  readonly order: string[]
  /** Answer with this status from now on (default 202). */
  answer(status: number): void
  close(): Promise<void>
}

/**
 * A sink that counts deliveries by ce-id; `byPath`: by `<request path>|<ce-id>`, for several sources posting to
 * paths of one sink (a delivery is then a source's record).
 */
export async function countingSink(options: { readonly byPath?: boolean } = {}): Promise<CountingSink> {
  const seen = new Map<string, number>()
  const order: string[] = []
  let status = 202
  const server: Server = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      if (status < 300) {
        const id = options.byPath ? `${req.url}|${String(req.headers['ce-id'])}` : String(req.headers['ce-id'])
        seen.set(id, (seen.get(id) ?? 0) + 1)
        order.push(id)
      }
      res.writeHead(status).end()
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    seen,
    order,
    answer: s => (status = s),
    close: () =>
      new Promise(resolve => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}

/** Produces records and remembers their ce-ids (`partition:P/offset:O`, as the KafkaSource maps them). */
export class RecordingProducer {
  readonly produced = new Set<string>()
  readonly #producer = new Producer({ clientId: 'as-test', bootstrapBrokers: brokers(), idempotent: true })

  async produce(topic: string, partitions: number, n: number): Promise<string[]> {
    const messages = Array.from({ length: n }, (_, i) => ({
      topic,
      partition: i % partitions,
      value: Buffer.from(`r${i}`)
    }))
    const result = await this.#producer.send({ acks: -1, messages })
    const next = new Map((result.offsets ?? []).map(o => [o.partition, o.offset]))
    const ids: string[] = []
    for (const m of messages) {
      const offset = next.get(m.partition)!
      next.set(m.partition, offset + 1n)
      ids.push(`partition:${m.partition}/offset:${offset}`)
    }
    for (const id of ids) this.produced.add(id)
    return ids
  }

  close(): Promise<void> {
    return this.#producer.close()
  }
}

/** Runs `shoal ARGS -s URL` as a process: its exit code and output. */
export function cli(server: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise(resolve => {
    execFile(process.execPath, [shoalBin, ...args, '-s', server], (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0
      resolve({ code, stdout, stderr })
    })
  })
}

export interface Presented {
  status: {
    conditions: Array<{ type: string; status: string; reason?: string; message?: string }>
    consumers?: number
    desiredConsumers?: number
    scaledBy?: string
    lastDeliveryError?: { message: string; time: string; dispatcher: string }
  }
}

export async function sourceAt(url: string, name: string): Promise<Presented> {
  const answer = await http('GET', `${url}${KS}/${name}`)
  if (answer.status !== 200) throw new Error(`GET ${name}: ${answer.status} ${JSON.stringify(answer.body)}`)
  return answer.body as Presented
}

export function condition(source: Presented, type: string): string | undefined {
  return source.status.conditions.find(c => c.type === type)?.status
}

export function kafkaSource(
  name: string,
  topic: string,
  sink: string,
  options: { consumers?: number; initialOffset?: string; annotations?: Record<string, string> } = {}
): string {
  const annotations = Object.entries(options.annotations ?? {})
    .map(([k, v]) => `    ${k}: "${v}"\n`)
    .join('')
  return (
    `apiVersion: sources.knative.dev/v1beta1\nkind: KafkaSource\nmetadata:\n  name: ${name}\n` +
    (annotations ? `  annotations:\n${annotations}` : '') +
    `spec:\n  bootstrapServers: [${brokers().join(',')}]\n  topics: [${topic}]\n` +
    (options.consumers === undefined ? '' : `  consumers: ${options.consumers}\n`) +
    `  initialOffset: ${options.initialOffset ?? 'latest'}\n  ordering: unordered\n  sink: {uri: "${sink}"}\n`
  )
}
