import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { Producer } from '@platformatic/kafka'
import { DEFAULT_SCHEDULE } from '../../src/api/index.ts'
import { LogTailer, ensureTopics } from '../../src/kafka/index.ts'
import type { LogRecord } from '../../src/kafka/index.ts'
import {
  BucketWriter,
  ResourceStore,
  appendInTransaction,
  bucketOf,
  storeNames,
  storeTopics
} from '../../src/store/index.ts'
import { ResourceView } from '../../src/store/resource-view.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'

const connection = (id: string) => ({ brokers: brokers(), clientId: id })

describe('the log tailer', () => {
  it('reads committed records only: aborted transactions never reach the store', async () => {
    const topic = uniqueName('tail')
    await ensureTopics(connection('tail-admin'), [{ name: topic, partitions: 1, configs: {} }])
    const producer = new Producer({
      clientId: 'tail-producer',
      bootstrapBrokers: brokers(),
      transactionalId: `${topic}-tx`,
      idempotent: true,
      acks: -1
    })
    const send = async (value: string, commit: boolean) => {
      const tx = await producer.beginTransaction({ producerId: -1n, producerEpoch: -1 })
      await tx.send({ messages: [{ topic, partition: 0, key: Buffer.from('k'), value: Buffer.from(value) }] })
      await (commit ? tx.commit() : tx.abort())
    }
    await send('one', true)
    await send('aborted', false)
    await send('two', true)
    await send('aborted-again', false)
    await producer.close()

    const seen: LogRecord[] = []
    const tailer = new LogTailer({ connection: connection('tail'), topics: [topic], onRecord: r => seen.push(r) })
    await tailer.start()
    try {
      await tailer.barrier([{ topic }])
      assert.deepEqual(
        seen.map(r => r.value?.toString()),
        ['one', 'two']
      )
      // The position moves past the transaction markers, to the end of the log.
      assert.ok(tailer.position(topic, 0) >= 7n)
    } finally {
      await tailer.close()
    }
  })
})

/** A fresh prefix's store topics with `buckets` partitions, and a view of them kept by a started tailer. */
async function storeOnTopics(tag: string, buckets: number) {
  const names = storeNames(uniqueName(tag))
  await ensureTopics(connection(`${tag}-admin`), storeTopics(names, buckets))
  const view = new ResourceView({
    resources: names.resourcesTopic,
    status: names.statusTopic,
    controllers: names.controllersTopic
  })
  const tailer = new LogTailer({
    connection: connection(`${tag}-tail`),
    topics: [names.resourcesTopic, names.statusTopic],
    onRecord: r => view.apply(r)
  })
  await tailer.start()
  return { names, view, tailer }
}

describe('the bucket writer', () => {
  const cleanup: Array<() => Promise<void>> = []
  after(async () => {
    for (const c of cleanup.reverse()) await c()
  })

  it('is fenced when a new owner opens its bucket: the former owner cannot append', async () => {
    const { names, view, tailer } = await storeOnTopics('fence', 2)
    cleanup.push(() => tailer.close())
    const key = (name: string) => `KafkaSource/default/${name}`
    const object = (name: string) => ({
      apiVersion: 'v1',
      kind: 'KafkaSource',
      metadata: { name, namespace: 'default' },
      spec: {}
    })
    // Two names in bucket 0.
    const names0 = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'].filter(n => bucketOf(key(n), 2) === 0).slice(0, 2)
    assert.equal(names0.length, 2)
    const options = { connection: connection('fence-w'), names, bucket: 0, tailer, view, statusOf: () => ({}) }

    const old = new BucketWriter(options)
    cleanup.push(() => old.close())
    await old.opened
    await old.write({ kind: 'create', object: object(names0[0]!) })

    const successor = new BucketWriter(options)
    cleanup.push(() => successor.close())
    await successor.opened

    await assert.rejects(
      old.write({ kind: 'create', object: object(names0[1]!) }),
      (error: Error & { code?: string }) => {
        assert.match(error.code ?? '', /SHOAL_FENCED|SHOAL_UNAVAILABLE/)
        return true
      }
    )
    await tailer.barrier([{ topic: names.resourcesTopic }])
    assert.ok(view.get(key(names0[0]!)), 'the write before the takeover stays')
    assert.equal(view.get(key(names0[1]!)), undefined, 'the fenced write never lands')
    // The new owner carries on, and sees what the old one wrote before it was fenced.
    const result = await successor.write({ kind: 'create', object: object(names0[1]!) })
    assert.equal(result.kind, 'written')
    await assert.rejects(successor.write({ kind: 'create', object: object(names0[0]!) }), /already exists/)
  })
})

describe('the bucket writer under concurrent writes', () => {
  it('carries writes that arrive together in shared transactions, each checked in arrival order', async () => {
    const { names, view, tailer } = await storeOnTopics('group', 1)
    const writer = new BucketWriter({
      connection: connection('group-w'),
      names,
      bucket: 0,
      tailer,
      view,
      statusOf: o => ({ g: o.metadata.generation })
    })
    try {
      await writer.opened
      const object = (name: string, spec: unknown = {}) => ({
        apiVersion: 'v1',
        kind: 'PingSource',
        metadata: { name, namespace: 'default' },
        spec
      })
      const key = (name: string) => `PingSource/default/${name}`
      // All issued at once: 40 creates, one of them twice; a status and an update right behind their creates;
      // a delete of something that does not exist.
      const settled = await Promise.allSettled([
        ...Array.from({ length: 40 }, (_, i) => writer.write({ kind: 'create', object: object(`s${i}`) })),
        writer.write({ kind: 'create', object: object('s7') }),
        writer.write({ kind: 'status', key: key('s3'), status: { custom: true } }),
        writer.write({ kind: 'update', object: object('s5', { changed: true }) }),
        writer.write({ kind: 'delete', key: key('nothing') })
      ])
      const outcome = settled.map(s => (s.status === 'fulfilled' ? 'ok' : (s.reason as { code?: string }).code))
      assert.deepEqual(outcome.slice(0, 40), Array(40).fill('ok'))
      assert.deepEqual(outcome.slice(40), ['SHOAL_CONFLICT', 'ok', 'ok', 'SHOAL_NOT_FOUND'])
      const results = settled
        .slice(0, 40)
        .map(s => (s as PromiseFulfilledResult<{ entry: { resourceVersion: string } }>).value)
      // Every create has its own resourceVersion, and fewer transactions than writes carried them: within one
      // transaction the resource records are adjacent offsets; between two, the commit marker takes an offset.
      const versions = results.map(r => Number(r.entry.resourceVersion)).sort((a, b) => a - b)
      assert.equal(new Set(versions).size, 40)
      const shared = versions.filter((v, i) => i > 0 && v === versions[i - 1]! + 1).length
      assert.ok(shared > 0, `no two creates shared a transaction: ${versions.join(' ')}`)

      await tailer.barrier([{ topic: names.resourcesTopic }, { topic: names.statusTopic }])
      assert.equal(view.list().length, 40)
      assert.deepEqual(view.get(key('s3'))!.status, { custom: true })
      // The store holds a kind's spec defaulted (withStoredDefaults): a PingSource gets the default schedule.
      assert.deepEqual(view.get(key('s5'))!.object.spec, { changed: true, schedule: DEFAULT_SCHEDULE })
      assert.equal(view.get(key('s5'))!.object.metadata.generation, 2)
      assert.deepEqual(view.get(key('s5'))!.status, { g: 2 })
      // Each create's resourceVersion is its record's offset, as every replica reads it from the log.
      // (s5 was updated after: its version is the update's.)
      const updated = (settled[42] as PromiseFulfilledResult<{ entry: { resourceVersion: string } }>).value
      for (const [i, result] of results.entries()) {
        const expected = i === 5 ? updated.entry.resourceVersion : result.entry.resourceVersion
        assert.equal(view.get(key(`s${i}`))!.resourceVersion, expected, `s${i}`)
      }
    } finally {
      await writer.close()
      await tailer.close()
    }
  })
})

describe('the resource store', () => {
  it('survives a restart: the same resources with the same resourceVersions', async () => {
    const prefix = uniqueName('restart')
    const open = (id: string) =>
      ResourceStore.open({
        connection: connection(id),
        prefix,
        buckets: 3,
        replicaId: id,
        url: `http://${id}`,
        statusOf: o => ({ g: o.metadata.generation })
      })
    const first = await open('first')
    await eventually(async () => (first.assignment.buckets.length === 3 ? true : undefined), 60_000, 'all buckets')
    const written = []
    for (const name of ['x', 'y', 'z']) {
      const r = await first.write({
        kind: 'create',
        object: { apiVersion: 'v1', kind: 'PingSource', metadata: { name, namespace: 'ns' }, spec: { n: name } }
      })
      written.push(r.entry)
    }
    await first.write({ kind: 'delete', key: 'PingSource/ns/y' })
    await first.close()

    const second = await open('second')
    try {
      const listed = await second.list()
      assert.deepEqual(
        listed.map(e => [e.key, e.resourceVersion, e.object.metadata.uid]),
        written.filter(e => e.key !== 'PingSource/ns/y').map(e => [e.key, e.resourceVersion, e.object.metadata.uid])
      )
      assert.deepEqual(listed[0]!.status, { g: 1 })
    } finally {
      await second.close()
    }
  })
})

describe('the resource store taking over a bucket', () => {
  it('tries again when a bucket’s writer cannot open, and the bucket takes writes without a rebalance', async () => {
    // Found by the network lab's zone cut (test/lab/zone-cut.lab.ts): a writer whose InitProducerId failed (the
    // transaction coordinator loading or unreachable) was dropped and never replaced, and its bucket refused
    // every write until the controllers' group rebalanced. Here the first writer of each bucket reaches no broker.
    const prefix = uniqueName('takeover')
    const failed: number[] = []
    const store = await ResourceStore.open({
      connection: connection('takeover'),
      prefix,
      buckets: 2,
      replicaId: 'takeover',
      url: 'http://takeover',
      statusOf: () => ({}),
      openWriter: options => {
        if (failed.includes(options.bucket)) return new BucketWriter(options)
        failed.push(options.bucket)
        return new BucketWriter({ ...options, connection: { ...options.connection, brokers: ['127.0.0.1:1'] } })
      }
    })
    try {
      await eventually(async () => (store.assignment.buckets.length === 2 ? true : undefined), 60_000, 'both buckets')
      const generation = store.assignment.generation
      for (const name of ['a', 'b', 'c', 'd']) {
        await eventually(
          async () =>
            store.ownerOf(bucketOf(`PingSource/ns/${name}`, 2)).kind === 'self'
              ? store.write({
                  kind: 'create',
                  object: { apiVersion: 'v1', kind: 'PingSource', metadata: { name, namespace: 'ns' }, spec: {} }
                })
              : undefined,
          30_000,
          `the bucket of ${name} taken over again`
        )
      }
      assert.deepEqual([...failed].sort(), [0, 1])
      assert.equal(store.assignment.generation, generation, 'no rebalance was needed')
      assert.equal((await store.list()).length, 4)
    } finally {
      await store.close()
    }
  })
})

describe('appendInTransaction', () => {
  it('writes a transaction larger than the broker takes in one request, and names every offset', async () => {
    const topic = uniqueName('append-big')
    await ensureTopics(connection('append-admin'), [{ name: topic, partitions: 2, configs: {} }])
    const producer = new Producer({
      clientId: 'append-producer',
      bootstrapBrokers: brokers(),
      transactionalId: `${topic}-tx`,
      idempotent: true,
      acks: -1
    })
    try {
      // 3,000 records of 500 bytes to one partition (1.5 MB: past the broker's 1 MiB message.max.bytes in one
      // batch), a few to another: what a scheduling pass for 3,000 schedules on one dispatcher writes.
      const records = [
        ...Array.from({ length: 3_000 }, (_, i) => ({
          topic,
          partition: 0,
          key: `k${i}`,
          value: { pad: 'x'.repeat(480), i }
        })),
        ...Array.from({ length: 5 }, (_, i) => ({ topic, partition: 1, key: `other${i}`, value: { i } }))
      ]
      const offsets = await appendInTransaction(producer, records)
      assert.equal(offsets.length, records.length)
      const seen: LogRecord[] = []
      const tailer = new LogTailer({
        connection: connection('append-tail'),
        topics: [topic],
        onRecord: r => seen.push(r)
      })
      await tailer.start()
      try {
        await tailer.barrier([{ topic }])
        assert.equal(seen.length, records.length, 'every record committed')
        const byKey = new Map(seen.map(r => [`${r.partition}/${r.key?.toString()}`, r.offset]))
        records.forEach((r, i) => assert.equal(byKey.get(`${r.partition}/${r.key}`), offsets[i], `offset of ${r.key}`))
      } finally {
        await tailer.close()
      }
    } finally {
      await producer.close()
    }
  })
})

describe('the resource store whose writer is fenced while it still owns the bucket', () => {
  it('opens the bucket again, and writes to it succeed without a rebalance', async () => {
    // Found by the network lab's controller pause (test/lab/controller-pause.lab.ts): a replica paused past its
    // session got its buckets back in the rebalance after it woke, kept its writers — fenced meanwhile by the
    // owners of the generation it missed — and refused every write to those buckets until the next rebalance.
    // Here a writer of another process, on the same transactional id, plays the owner it missed.
    const prefix = uniqueName('refence')
    const made: Array<ConstructorParameters<typeof BucketWriter>[0]> = []
    const store = await ResourceStore.open({
      connection: connection('refence'),
      prefix,
      buckets: 1,
      replicaId: 'refence',
      url: 'http://refence',
      statusOf: () => ({}),
      openWriter: options => {
        made.push(options)
        return new BucketWriter(options)
      }
    })
    const object = (name: string) => ({
      apiVersion: 'v1',
      kind: 'PingSource',
      metadata: { name, namespace: 'ns' },
      spec: {}
    })
    let stray: BucketWriter | undefined
    try {
      await eventually(async () => (store.ownerOf(0).kind === 'self' ? true : undefined), 60_000, 'bucket 0')
      await store.write({ kind: 'create', object: object('before') })
      const generation = store.assignment.generation
      stray = new BucketWriter({ ...made[0]!, connection: connection('refence-stray') })
      await stray.opened
      let refused = 0
      await eventually(
        async () => {
          try {
            return await store.write({ kind: 'create', object: object('after') })
          } catch (error) {
            refused++
            throw error
          }
        },
        30_000,
        'a write to the bucket again'
      )
      assert.ok(refused >= 1, 'the fenced writer refused a write first')
      assert.equal(made.length, 2, 'the bucket was opened again')
      assert.equal(store.assignment.generation, generation, 'no rebalance was needed')
      assert.deepEqual((await store.list()).map(e => e.object.metadata.name).sort(), ['after', 'before'])
    } finally {
      await stray?.close()
      await store.close()
    }
  })
})
