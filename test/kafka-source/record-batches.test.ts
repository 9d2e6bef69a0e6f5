import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { decodeFetchedBatches } from '../../src/kafka-source/record-batches.ts'
import { LOG_APPEND_TIME, TRANSACTIONAL, batch, marker } from '../helpers/batches.ts'

const offsets = (r: { records: Array<{ offset: bigint }> }): bigint[] => r.records.map(x => x.offset)

describe('decodeFetchedBatches', () => {
  it('returns records at and after the position, with headers, timestamps and the fetch time', () => {
    const r = decodeFetchedBatches('t', 3, [batch(0n, 4)], [], 2n, 1234.5)
    assert.deepEqual(offsets(r), [2n, 3n])
    assert.equal(r.next, 4n)
    assert.deepEqual(
      r.records.map(x => x.fetchedAt),
      [1234.5, 1234.5]
    )
    assert.equal(r.records[0]!.timestamp, 1_002n)
    assert.deepEqual(r.records[0]!.headers, [['h', Buffer.from('x')]])
    assert.equal(r.records[0]!.partition, 3)
  })

  it("takes the broker's append time on a LogAppendTime topic", () => {
    const r = decodeFetchedBatches('t', 0, [batch(0n, 2, { attributes: LOG_APPEND_TIME })], [], 0n)
    assert.deepEqual(
      r.records.map(x => x.timestamp),
      [2_000n, 2_000n]
    )
  })

  it('drops an aborted transaction and keeps a committed one of the same producer after its marker', () => {
    const batches = [
      batch(0n, 2, { attributes: TRANSACTIONAL, producerId: 7n }),
      marker(2n, 7n), // abort
      batch(3n, 2, { attributes: TRANSACTIONAL, producerId: 7n }),
      marker(5n, 7n), // commit
      batch(6n, 1)
    ]
    const r = decodeFetchedBatches('t', 0, batches, [{ producerId: 7n, firstOffset: 0n }], 0n)
    assert.deepEqual(offsets(r), [3n, 4n, 6n])
    assert.equal(r.next, 7n, 'past the last batch')
  })

  it('drops an aborted range whose marker is not in this response (the client library keeps it)', () => {
    const r = decodeFetchedBatches(
      't',
      0,
      [batch(0n, 2, { attributes: TRANSACTIONAL, producerId: 9n }), batch(2n, 1)],
      [{ producerId: 9n, firstOffset: 0n }],
      0n
    )
    assert.deepEqual(offsets(r), [2n])
  })

  it('closes an aborted range on a marker before the position', () => {
    const batches = [
      batch(0n, 1, { attributes: TRANSACTIONAL, producerId: 4n }),
      marker(1n, 4n),
      batch(2n, 1, { attributes: TRANSACTIONAL, producerId: 4n })
    ]
    const r = decodeFetchedBatches('t', 0, batches, [{ producerId: 4n, firstOffset: 0n }], 2n)
    assert.deepEqual(offsets(r), [2n])
  })

  it('stays at the position when an answer holds no batch: an empty answer says nothing about the log', () => {
    // The broker answers so when the partition's first batch does not fit the request's limits (KIP-74).
    assert.equal(decodeFetchedBatches('t', 0, [], [], 5n).next, 5n)
    assert.deepEqual(decodeFetchedBatches('t', 0, [], [], 5n).records, [])
  })

  it('moves past markers only: a marker is a batch', () => {
    const r = decodeFetchedBatches('t', 0, [marker(5n, 3n), marker(6n, 4n)], [], 5n)
    assert.deepEqual(r.records, [])
    assert.equal(r.next, 7n)
  })

  it('copies small records out of the socket read they sit in, so one in flight does not keep the read alive', () => {
    const read = Buffer.alloc(64 * 1024, 7)
    read.write('key', 100)
    const small = read.subarray(1_000, 2_024)
    const large = read.subarray(0, 60_000)
    const records = [
      { offsetDelta: 0, timestampDelta: 0n, key: read.subarray(100, 103), value: small, headers: [] },
      {
        offsetDelta: 1,
        timestampDelta: 0n,
        key: null,
        value: large,
        headers: [[Buffer.from('h'), read.subarray(5, 6)]]
      },
      { offsetDelta: 2, timestampDelta: 0n, key: null, value: read.subarray(9, 9), headers: [] }
    ] as const
    const r = decodeFetchedBatches('t', 0, [{ ...batch(0n, 3), records }], [], 0n)
    const [a, b, c] = r.records
    assert.deepEqual(a!.value, small)
    assert.notEqual(a!.value.buffer, read.buffer)
    assert.equal(a!.key!.toString(), 'key')
    assert.notEqual(a!.key!.buffer, read.buffer)
    assert.equal(b!.value, large) // most of its read: kept as it is
    assert.deepEqual(b!.headers[0]![1], Buffer.from([7]))
    assert.notEqual(b!.headers[0]![1].buffer, read.buffer)
    assert.equal(c!.value!.length, 0)
    assert.notEqual(c!.value!.buffer, read.buffer)
  })
})
