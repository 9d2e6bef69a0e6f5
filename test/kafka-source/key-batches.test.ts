// A model test of KeyBatches, the batch builder of `ordering: key` with batched delivery: fast-check draws records
// (a few keys, some null, random sizes) put in the partition's queue, batches built and handed out (at once when
// full, or when their wait is over), batches ending in any order, and the partition cleared (revoked). A tiny
// reference model keeps each key's unsent offsets and which batch out holds which key. Throughout: a batch is
// within its limits and in offset order; no key is in two batches out; each key's records go out in offset order,
// each once; a batch not full leaves nothing behind that could have joined it; the counts agree. At the end,
// with every batch over, building again sends every record of the partition since its last clear.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { KeyBatches } from '../../src/kafka-source/key-batches.ts'
import type { KeyBatch, KeyBatchItems } from '../../src/kafka-source/key-batches.ts'

interface Item {
  readonly key: string | undefined
  readonly offset: bigint
  readonly bytes: number
}

const ITEMS: KeyBatchItems<Item> = {
  key: item => item.key,
  bytes: item => item.bytes,
  offset: item => item.offset,
  // Every record fetched at 0: at `now` 0 a batch not full waits, at `now` ≥ maxWait it is due.
  fetchedAt: () => 0
}
const MAX_WAIT = 10

type Step =
  | { readonly kind: 'fetch'; readonly records: ReadonlyArray<{ key: number | null; bytes: number }> }
  | { readonly kind: 'build'; readonly due: boolean }
  | { readonly kind: 'end'; readonly pick: number }
  | { readonly kind: 'clear' }

const scenario = fc.record({
  maxEvents: fc.integer({ min: 2, max: 6 }),
  maxBytes: fc.integer({ min: 8, max: 40 }),
  steps: fc.array<Step>(
    fc.oneof(
      {
        weight: 4,
        arbitrary: fc.record({
          kind: fc.constant('fetch' as const),
          records: fc.array(
            fc.record({
              key: fc.option(fc.integer({ min: 0, max: 4 }), { freq: 6 }),
              bytes: fc.integer({ min: 1, max: 12 })
            }),
            { maxLength: 12 }
          )
        })
      },
      { weight: 6, arbitrary: fc.record({ kind: fc.constant('build' as const), due: fc.boolean() }) },
      { weight: 5, arbitrary: fc.record({ kind: fc.constant('end' as const), pick: fc.nat() }) },
      { weight: 1, arbitrary: fc.constant({ kind: 'clear' as const }) }
    ),
    // 'max': fast-check's default size would keep it to about ten steps.
    { maxLength: 120, size: 'max' }
  )
})

/** The reference: the partition's queue, each key's unsent offsets in order, and the batches out. */
class Model {
  queue: Array<Item | undefined> = []
  head = 0
  nextOffset = 0n
  /** Per key (null as '∅'), its records not sent yet, in offset order (queued, waiting, or being built). */
  unsent = new Map<string, bigint[]>()
  /** Batches out, and which one holds each key. */
  out: Array<KeyBatch<Item>> = []
  holder = new Map<string, KeyBatch<Item>>()
  /** Offsets sent since the last clear, and all offsets fetched since then. */
  sent = new Set<bigint>()
  fetched = new Set<bigint>()

  unsentCount(): number {
    let n = 0
    for (const offsets of this.unsent.values()) n += offsets.length
    return n
  }
}

const keyOf = (item: Item) => item.key ?? '∅'

/** Takes the batch being built and checks it against the model. */
function take(batches: KeyBatches<Item>, model: Model, maxEvents: number, maxBytes: number): KeyBatch<Item> {
  const batch = batches.take()
  const { items } = batch
  assert.ok(items.length >= 1 && items.length <= maxEvents, `a batch of ${items.length}`)
  const bytes = items.reduce((n, item) => n + item.bytes, 0)
  assert.ok(items.length === 1 || bytes <= maxBytes, `a batch of ${bytes} bytes`)
  for (let i = 1; i < items.length; i++) assert.ok(items[i - 1]!.offset < items[i]!.offset, 'a batch in offset order')
  for (const item of items) {
    assert.ok(!model.sent.has(item.offset), `offset ${item.offset} sent twice`)
    model.sent.add(item.offset)
    const offsets = model.unsent.get(keyOf(item))!
    if (item.key === undefined) {
      offsets.splice(offsets.indexOf(item.offset), 1)
      continue
    }
    assert.equal(item.offset, offsets[0], `key ${item.key}: offset ${item.offset} out of order`)
    offsets.shift()
    const other = model.holder.get(item.key)
    assert.ok(other === undefined || other === batch, `key ${item.key} in two batches out`)
    model.holder.set(item.key, batch)
  }
  model.out.push(batch)
  return batch
}

function end(batches: KeyBatches<Item>, model: Model, index: number): void {
  const [batch] = model.out.splice(index, 1)
  for (const [key, holder] of model.holder) if (holder === batch) model.holder.delete(key)
  batches.end(batch!)
}

/**
 * Nothing left behind that could have joined the batch built (`built`, not full): each key with records unsent is
 * held by another batch out.
 */
function checkNothingLeft(model: Model, batches: KeyBatches<Item>, built?: KeyBatch<Item>): void {
  assert.equal(model.head, model.queue.length, 'a batch not full took the whole queue')
  assert.equal(batches.building, 0)
  for (const [key, offsets] of model.unsent) {
    if (offsets.length === 0) continue
    assert.notEqual(key, '∅', 'a record without a key left behind')
    const holder = model.holder.get(key)
    assert.ok(holder !== undefined && holder !== built, `key ${key} has records waiting and no other batch holds it`)
  }
}

function build(batches: KeyBatches<Item>, model: Model, s: { maxEvents: number; maxBytes: number }, due: boolean) {
  const before = model.head
  model.head = batches.fill(model.queue, model.head)
  assert.ok(model.head >= before && model.head <= model.queue.length)
  for (let i = before; i < model.head; i++) assert.equal(model.queue[i], undefined, 'a record taken stays in the queue')
  // A batch is due at 0 only when full (every record was fetched at 0).
  const full = batches.decide(0, MAX_WAIT).kind === 'send'
  const decision = batches.decide(due ? MAX_WAIT : 0, MAX_WAIT)
  if (decision.kind === 'empty') {
    checkNothingLeft(model, batches)
    return
  }
  if (decision.kind === 'wait') {
    assert.equal(decision.at, MAX_WAIT)
    return
  }
  const batch = take(batches, model, s.maxEvents, s.maxBytes)
  if (!full) checkNothingLeft(model, batches, batch)
}

function checkCounts(batches: KeyBatches<Item>, model: Model): void {
  const taken = model.unsentCount() - (model.queue.length - model.head)
  assert.equal(batches.waiting + batches.building, taken, 'records taken from the queue and not sent')
}

describe('KeyBatches (ordering: key with batches), model-based', () => {
  it('never puts a key in two batches out, sends each key in offset order, each record once, nothing left', () => {
    fc.assert(
      fc.property(scenario, s => {
        const batches = new KeyBatches<Item>({ maxEvents: s.maxEvents, maxBytes: s.maxBytes }, ITEMS)
        const model = new Model()
        for (const step of s.steps) {
          if (step.kind === 'fetch') {
            for (const { key, bytes } of step.records) {
              const item = { key: key === null ? undefined : `k${key}`, offset: model.nextOffset++, bytes }
              model.queue.push(item)
              model.fetched.add(item.offset)
              const offsets = model.unsent.get(keyOf(item)) ?? []
              offsets.push(item.offset)
              model.unsent.set(keyOf(item), offsets)
            }
          } else if (step.kind === 'build') {
            build(batches, model, s, step.due)
          } else if (step.kind === 'end') {
            if (model.out.length > 0) end(batches, model, step.pick % model.out.length)
          } else {
            // Revoked: the queue and what waits are let go; batches out are abandoned (their end frees nothing).
            const dropped = batches.clear()
            assert.equal(dropped + model.queue.length - model.head, model.unsentCount(), 'clear lets go of the rest')
            model.queue = []
            model.head = 0
            model.unsent.clear()
            model.holder.clear()
            model.sent.clear()
            model.fetched.clear()
          }
          checkCounts(batches, model)
        }
        // Then every batch ends and building goes on until nothing is left.
        for (let guard = 0; model.out.length > 0 || model.unsentCount() > 0; guard++) {
          assert.ok(guard < 1_000, 'records never sent')
          while (model.out.length > 0) end(batches, model, 0)
          build(batches, model, s, true)
          checkCounts(batches, model)
        }
        assert.deepEqual([...model.sent].sort(), [...model.fetched].sort(), 'every record sent once since the clear')
        while (model.out.length > 0) end(batches, model, 0)
        assert.equal(batches.busyKeys, 0, 'no key held once every batch is over')
      }),
      { numRuns: Number(process.env['SHOAL_MODEL_RUNS'] ?? 1_000) }
    )
  })

  it('takes the keys freed by a batch first, oldest first, then the queue; a key’s records share a batch', () => {
    const batches = new KeyBatches<Item>({ maxEvents: 10, maxBytes: 1_000 }, ITEMS)
    let offset = 0n
    const queue = ['a', 'b', 'a', undefined, 'b', 'c', 'a'].map(key => ({ key, offset: offset++, bytes: 1 }))
    assert.equal(batches.fill(queue, 0), queue.length)
    const first = batches.take()
    assert.deepEqual(
      first.items.map(i => i.offset),
      [0n, 1n, 2n, 3n, 4n, 5n, 6n],
      'one batch: keys share it in offset order'
    )
    const more = ['a', 'c', 'd', 'a', 'b'].map(key => ({ key, offset: offset++, bytes: 1 }))
    batches.fill(more, 0)
    assert.deepEqual(
      batches.take().items.map(i => i.offset),
      [9n],
      'a, b and c are held by the batch out: only d goes'
    )
    assert.equal(batches.waiting, 4)
    batches.end(first)
    // Its keys are ready in the order it took them (a, b, c), each with its waiting records.
    const next = ['e', 'a'].map(key => ({ key, offset: offset++, bytes: 1 }))
    batches.fill(next, 0)
    assert.deepEqual(
      batches.take().items.map(i => `${i.key}${i.offset}`),
      ['a7', 'c8', 'a10', 'b11', 'e12', 'a13'],
      'freed keys first, then the queue; in offset order'
    )
    assert.equal(batches.waiting, 0)
  })
})
