// `ordering: key` through the whole system: a KafkaSource created through the API, a `shoal dispatcher`
// process, the real broker and a real HTTP sink that answers after a random delay and refuses some first attempts
// with 503 (the source's delivery retries them). At the sink: never two requests of one key at once, each key's
// requests in offset order, and every record of the topic delivered (against the partitions' end offsets).
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, it } from 'node:test'
import { Producer } from '@platformatic/kafka'
import { ensureTopics } from '../../src/kafka/index.ts'
import { startControllerProcess } from '../helpers/controllers.ts'
import { startDispatcherProcess } from '../helpers/dispatchers.ts'
import { http } from '../helpers/http.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { endOffsets } from '../kafka-source/helpers.ts'

const KS = '/apis/sources.knative.dev/v1beta1/namespaces/default/kafkasources'
const PARTITIONS = 6
const KEYS = 60
const RECORDS = 1_500

/** What the sink saw: per key its requests' offsets and how many are open now; per partition the offsets answered 200. */
class SinkLog {
  readonly attempts = new Map<string, number[]>()
  readonly open = new Map<string, number>()
  readonly delivered = new Map<number, Set<number>>()
  readonly overlaps: string[] = []
  retried = 0
  noKey = 0
  /** The most requests with a key open at once (`ordered` allows one per partition). */
  mostOpen = 0
  #openNow = 0

  begin(key: string, offset: number): void {
    const open = this.open.get(key) ?? 0
    if (open > 0) this.overlaps.push(`${key} @${offset}`)
    this.open.set(key, open + 1)
    this.mostOpen = Math.max(this.mostOpen, ++this.#openNow)
    const list = this.attempts.get(key) ?? []
    list.push(offset)
    this.attempts.set(key, list)
  }

  end(key: string): void {
    this.open.set(key, this.open.get(key)! - 1)
    this.#openNow--
  }

  get deliveredCount(): number {
    let n = 0
    for (const set of this.delivered.values()) n += set.size
    return n
  }
}

describe('ordering: key through the whole system', () => {
  it('delivers each key one at a time in offset order through retries, to a real sink, nothing lost', async () => {
    const prefix = uniqueName('keyorder')
    const topic = `${prefix}-topic`
    await ensureTopics({ brokers: brokers(), clientId: 'keyorder' }, [
      { name: topic, partitions: PARTITIONS, configs: {} }
    ])
    const log = new SinkLog()
    const server = createServer((req, res) => {
      const [partition, offset] = /partition:(\d+)#(\d+)/.exec(String(req.headers['ce-subject']))!.slice(1).map(Number)
      const key = req.headers['ce-key'] === undefined ? undefined : `${partition}/${String(req.headers['ce-key'])}`
      if (key === undefined) log.noKey++
      else log.begin(key, offset!)
      req.resume()
      req.on('end', () => {
        setTimeout(() => {
          if (key !== undefined) log.end(key)
          // A quarter of first attempts fail: the retry must come before the key's next record.
          const seen = log.delivered.get(partition!) ?? new Set<number>()
          log.delivered.set(partition!, seen)
          const attempts = key === undefined ? 1 : log.attempts.get(key)!.filter(o => o === offset).length
          if (attempts === 1 && Math.random() < 0.25) {
            log.retried++
            res.writeHead(503).end()
            return
          }
          seen.add(offset!)
          res.writeHead(200).end()
        }, Math.random() * 20)
      })
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    const sinkUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
    const controller = await startControllerProcess(prefix)
    const dispatcher = await startDispatcherProcess(prefix, 'dispatcher-0', 'a', 'a-1', 10)
    try {
      const producer = new Producer({ clientId: 'keyorder', bootstrapBrokers: brokers(), idempotent: true })
      try {
        for (let from = 0; from < RECORDS; from += 500) {
          await producer.send({
            acks: -1,
            messages: Array.from({ length: 500 }, (_, i) => {
              const n = from + i
              // Keys spread over all partitions (a key in several partitions is ordered per partition), and a
              // few records without a key.
              const key = n % 50 === 7 ? undefined : Buffer.from(`k${(n * 7919) % KEYS}`)
              return {
                topic,
                partition: n % PARTITIONS,
                ...(key === undefined ? {} : { key }),
                value: Buffer.from(`${n}`)
              }
            })
          })
        }
      } finally {
        await producer.close()
      }
      const created = await http(
        'POST',
        `${controller.url}${KS}`,
        `apiVersion: sources.knative.dev/v1beta1\nkind: KafkaSource\nmetadata: {name: keyed}\nspec:\n  bootstrapServers: [${brokers().join(',')}]\n  topics: [${topic}]\n  initialOffset: earliest\n  ordering: key\n  maxInFlight: 40\n  sink: {uri: "${sinkUrl}"}\n  delivery:\n    retry: 5\n    backoffDelay: PT0.02S\n`
      )
      assert.equal(created.status, 201, JSON.stringify(created.body))
      assert.equal(created.body.spec.ordering, 'key')
      const ends = await endOffsets(topic, PARTITIONS)
      const total = ends.reduce((n, end) => n + Number(end), 0)
      assert.equal(total, RECORDS)
      await eventually(
        async () => (log.deliveredCount >= total ? true : undefined),
        120_000,
        `all ${total} records at the sink`
      )
      assert.ok(log.retried > 0, 'some deliveries were retried')
      assert.ok(log.noKey > 0, 'records without a key were delivered too')
      assert.deepEqual(log.overlaps.slice(0, 5), [], `${log.overlaps.length} requests of a key while another was open`)
      for (const [key, offsets] of log.attempts) {
        const sorted = [...offsets].sort((a, b) => a - b)
        assert.deepEqual(offsets, sorted, `key ${key}: requests out of offset order`)
      }
      ends.forEach((end, partition) => {
        const seen = log.delivered.get(partition) ?? new Set()
        const missing = Array.from({ length: Number(end) }, (_, o) => o).filter(o => !seen.has(o))
        assert.deepEqual(missing.slice(0, 10), [], `partition ${partition}: ${missing.length} offsets never delivered`)
      })
      // Parallelism across keys: more requests open at once than `ordered` allows (one per partition).
      assert.ok(log.mostOpen > PARTITIONS, `at most ${log.mostOpen} requests open at once`)
    } finally {
      await controller.stop()
      await dispatcher.stop()
      server.close()
    }
  })
})
