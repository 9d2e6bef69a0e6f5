// `ordering: key` through the whole system: a KafkaSource created through the API, a `shoal dispatcher`
// process, the real broker and a real HTTP sink that answers after a random delay and refuses some first attempts
// with 503 (the source's delivery retries them). At the sink: never two requests of one key at once, each key's
// requests in offset order, and every record of the topic delivered (against the partitions' end offsets). Then
// the same in batches (delivery.shoal.dev/batch-*): never two batches holding one key open at once, each key's
// records in offset order across batches, every record delivered.
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
import { startPythonSink } from '../sinks/python-sink.ts'

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

/**
 * What every sink of key ordering must have seen: no two requests of a key open at once, each key's requests in
 * offset order, every offset of the topic delivered, and more requests open at once than `ordered` allows (one
 * per partition): parallelism across keys.
 */
function checkKeyOrder(log: SinkLog, ends: readonly bigint[]): void {
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
  assert.ok(log.mostOpen > PARTITIONS, `at most ${log.mostOpen} requests open at once`)
}

/**
 * Produces RECORDS records round-robin over the partitions, keyed over `keys` keys (a key in several partitions
 * is ordered per partition), one in 50 without a key.
 */
async function produceKeyed(topic: string, keys: number): Promise<void> {
  const producer = new Producer({ clientId: 'keyorder', bootstrapBrokers: brokers(), idempotent: true })
  try {
    for (let from = 0; from < RECORDS; from += 500) {
      await producer.send({
        acks: -1,
        messages: Array.from({ length: 500 }, (_, i) => {
          const n = from + i
          const key = n % 50 === 7 ? undefined : Buffer.from(`k${(n * 7919) % keys}`)
          return { topic, partition: n % PARTITIONS, ...(key === undefined ? {} : { key }), value: Buffer.from(`${n}`) }
        })
      })
    }
  } finally {
    await producer.close()
  }
}

/** A batch at the sink: its partition, its records (key as `partition/key`), and whether it was tried before. */
interface SinkBatch {
  readonly partition: number
  readonly records: ReadonlyArray<{ readonly key: string | undefined; readonly offset: number }>
  readonly keys: ReadonlySet<string>
  readonly firstAttempt: boolean
}

/**
 * What a batching sink saw: per key, how many open batches hold it, the first offset of it each attempt carried,
 * and its last offset delivered; per partition the offsets answered 200 and the batches open at once.
 */
class BatchLog {
  readonly #holding = new Map<string, number>()
  readonly #attemptStart = new Map<string, number>()
  readonly #lastDelivered = new Map<string, number>()
  readonly #tried = new Set<string>()
  readonly #openPerPartition = new Map<number, number>()
  readonly delivered = new Map<number, Set<number>>()
  readonly overlaps: string[] = []
  readonly outOfOrder: string[] = []
  readonly twice: string[] = []
  readonly sizes: number[] = []
  retried = 0
  noKey = 0
  mostOpenPerPartition = 0

  begin(body: Buffer): SinkBatch {
    const events = JSON.parse(body.toString()) as Array<{ subject: string; key?: string }>
    const records = events.map(event => {
      const [partition, offset] = /partition:(\d+)#(\d+)/.exec(event.subject)!.slice(1).map(Number)
      return {
        partition: partition!,
        offset: offset!,
        key: event.key === undefined ? undefined : `${partition}/${event.key}`
      }
    })
    const partition = records[0]!.partition
    const id = `${partition}:${records.map(r => r.offset).join(',')}`
    const firstAttempt = !this.#tried.has(id)
    this.#tried.add(id)
    const keys = new Set<string>()
    for (const { key, offset } of records) {
      if (key === undefined) continue
      if (!keys.has(key)) {
        keys.add(key)
        const holding = this.#holding.get(key) ?? 0
        if (holding > 0) this.overlaps.push(`${key} @${offset}`)
        this.#holding.set(key, holding + 1)
        // A key's attempts start where its previous attempt started (a retry) or later, never before.
        if (offset < (this.#attemptStart.get(key) ?? -1)) this.outOfOrder.push(`${key} @${offset} after a later one`)
        this.#attemptStart.set(key, offset)
      }
      if (offset <= (this.#lastDelivered.get(key) ?? -1)) this.outOfOrder.push(`${key} @${offset}`)
    }
    for (let i = 1; i < records.length; i++) {
      if (records[i]!.offset <= records[i - 1]!.offset) this.outOfOrder.push(`batch ${id} not in offset order`)
    }
    const open = (this.#openPerPartition.get(partition) ?? 0) + 1
    this.#openPerPartition.set(partition, open)
    this.mostOpenPerPartition = Math.max(this.mostOpenPerPartition, open)
    this.sizes.push(records.length)
    return { partition, records, keys, firstAttempt }
  }

  end(batch: SinkBatch, delivered: boolean): void {
    for (const key of batch.keys) this.#holding.set(key, this.#holding.get(key)! - 1)
    this.#openPerPartition.set(batch.partition, this.#openPerPartition.get(batch.partition)! - 1)
    if (!delivered) {
      this.retried++
      return
    }
    const seen = this.delivered.get(batch.partition) ?? new Set<number>()
    this.delivered.set(batch.partition, seen)
    for (const { key, offset } of batch.records) {
      if (seen.has(offset)) this.twice.push(`${batch.partition}:${offset}`)
      seen.add(offset)
      if (key === undefined) this.noKey++
      else this.#lastDelivered.set(key, offset)
    }
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
      await produceKeyed(topic, KEYS)
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
      checkKeyOrder(log, ends)
    } finally {
      await controller.stop()
      await dispatcher.stop()
      server.close()
    }
  })

  it('to the Python standard-library sink (listen backlog 5): each key one at a time, in offset order, nothing lost', async () => {
    const prefix = uniqueName('keyorder-py')
    const topic = `${prefix}-topic`
    await ensureTopics({ brokers: brokers(), clientId: 'keyorder' }, [
      { name: topic, partitions: PARTITIONS, configs: {} }
    ])
    const log = new SinkLog()
    const keyOf = new Map<string, { key: string | undefined; partition: number; offset: number }>()
    // It prints each event as it arrives, and again before its answer leaves.
    const sink = await startPythonSink(['--trace', '--delay-ms', '10'], line => {
      if (line.kind === 'arrived') {
        const { id = '', subject = '', key } = line.attributes
        const [partition, offset] = /partition:(\d+)#(\d+)/.exec(subject)!.slice(1).map(Number)
        const lane = key === undefined ? undefined : `${partition}/${key}`
        keyOf.set(id, { key: lane, partition: partition!, offset: offset! })
        if (lane === undefined) log.noKey++
        else log.begin(lane, offset!)
        return
      }
      const arrived = keyOf.get(line.id)
      if (arrived === undefined) return
      if (arrived.key !== undefined) log.end(arrived.key)
      const seen = log.delivered.get(arrived.partition) ?? new Set<number>()
      log.delivered.set(arrived.partition, seen)
      seen.add(arrived.offset)
    })
    const controller = await startControllerProcess(prefix)
    const dispatcher = await startDispatcherProcess(prefix, 'dispatcher-0', 'a', 'a-1', 10)
    try {
      await produceKeyed(topic, KEYS)
      const created = await http(
        'POST',
        `${controller.url}${KS}`,
        `apiVersion: sources.knative.dev/v1beta1\nkind: KafkaSource\nmetadata: {name: keyed}\nspec:\n  bootstrapServers: [${brokers().join(',')}]\n  topics: [${topic}]\n  initialOffset: earliest\n  ordering: key\n  maxInFlight: 40\n  sink: {uri: "${sink.url}"}\n`
      )
      assert.equal(created.status, 201, JSON.stringify(created.body))
      const ends = await endOffsets(topic, PARTITIONS)
      const total = ends.reduce((n, end) => n + Number(end), 0)
      await eventually(
        async () => (log.deliveredCount >= total ? true : undefined),
        120_000,
        () => `all ${total} records at the sink (${log.deliveredCount} so far)`
      )
      checkKeyOrder(log, ends)
    } finally {
      await controller.stop()
      await dispatcher.stop()
      await sink.stop()
    }
  })

  it('in batches: a batch holds its keys, each key in offset order across batches through retries, nothing lost', async () => {
    const prefix = uniqueName('keybatch')
    const topic = `${prefix}-topic`
    await ensureTopics({ brokers: brokers(), clientId: 'keybatch' }, [
      { name: topic, partitions: PARTITIONS, configs: {} }
    ])
    const log = new BatchLog()
    const server = createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (chunk: Buffer) => chunks.push(chunk))
      req.on('end', () => {
        const batch = log.begin(Buffer.concat(chunks))
        setTimeout(() => {
          // A quarter of batches fail their first attempt: the retry, whole, must come before the keys' next records.
          const refuse = batch.firstAttempt && Math.random() < 0.25
          log.end(batch, !refuse)
          res.writeHead(refuse ? 503 : 200).end()
        }, Math.random() * 20)
      })
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    const sinkUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
    const controller = await startControllerProcess(prefix)
    const dispatcher = await startDispatcherProcess(prefix, 'dispatcher-0', 'a', 'a-1', 10)
    try {
      // 20 keys per partition, batches of at most 8: a batch cannot hold them all, so batches of one partition go
      // in parallel while others wait behind their keys.
      await produceKeyed(topic, 120)
      const manifest = [
        'apiVersion: sources.knative.dev/v1beta1',
        'kind: KafkaSource',
        'metadata:',
        '  name: keyed-batches',
        '  annotations:',
        '    delivery.shoal.dev/batch-max-events: "8"',
        '    delivery.shoal.dev/batch-max-wait: PT0.01S',
        'spec:',
        `  bootstrapServers: [${brokers().join(',')}]`,
        `  topics: [${topic}]`,
        '  initialOffset: earliest',
        '  ordering: key',
        '  maxInFlight: 40',
        `  sink: {uri: "${sinkUrl}"}`,
        '  delivery:',
        '    retry: 5',
        '    backoffDelay: PT0.02S',
        ''
      ].join('\n')
      const created = await http('POST', `${controller.url}${KS}`, manifest)
      assert.equal(created.status, 201, JSON.stringify(created.body))
      const ends = await endOffsets(topic, PARTITIONS)
      const total = ends.reduce((n, end) => n + Number(end), 0)
      assert.equal(total, RECORDS)
      await eventually(
        async () => (log.deliveredCount >= total ? true : undefined),
        120_000,
        `all ${total} records at the sink`
      )
      assert.ok(log.retried > 0, 'some batches were retried')
      assert.ok(log.noKey > 0, 'records without a key were delivered too')
      assert.ok(
        log.sizes.some(size => size > 1),
        'records went in batches'
      )
      assert.deepEqual(
        log.overlaps.slice(0, 5),
        [],
        `${log.overlaps.length} batches with a key another open batch held`
      )
      assert.deepEqual(log.outOfOrder.slice(0, 5), [], `${log.outOfOrder.length} records out of their key's order`)
      assert.deepEqual(log.twice.slice(0, 5), [], `${log.twice.length} records delivered twice`)
      ends.forEach((end, partition) => {
        const seen = log.delivered.get(partition) ?? new Set()
        const missing = Array.from({ length: Number(end) }, (_, o) => o).filter(o => !seen.has(o))
        assert.deepEqual(missing.slice(0, 10), [], `partition ${partition}: ${missing.length} offsets never delivered`)
      })
      // Parallelism across keys within a partition: more than one batch of a partition open at once.
      assert.ok(log.mostOpenPerPartition > 1, `at most ${log.mostOpenPerPartition} batches of a partition open at once`)
    } finally {
      await controller.stop()
      await dispatcher.stop()
      server.close()
    }
  })
})
