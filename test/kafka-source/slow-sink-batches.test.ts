// Batched delivery to a sink slower than the group's timeouts, while a member joins and leaves (issue 16): the
// real broker, real Deliverers (one per runner, as one per dispatcher process), a real HTTP sink that holds every
// answer longer than the session and rebalance timeouts — and longer than a revoked partition's drain and a
// closing member's drain, so the batches on the wire at each hand-over are cut and delivered again by the next
// owner. The sink tells the two apart: a request answered 2xx, and a request whose connection closed before its
// answer (cut, not handled). What must hold, against the topic's end offsets: every record answered at least once
// (nothing lost); a record answered twice only where its partition had a cut request at or below it before the
// second arrival (the commit is the contiguous handled prefix, so only what follows an unhandled batch comes again);
// under `ordered` no record is answered twice at all, and each partition's order holds as test/helpers/lane-order.ts
// states it. Then the sink turns fast and the group commits to the end.
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, describe, it } from 'node:test'
import { Deliverer, resolveDeliveryPolicy } from '../../src/delivery/index.ts'
import type { DeliveryTarget } from '../../src/delivery/index.ts'
import { GROUP_REBALANCE_TIMEOUT_MS, GROUP_SESSION_TIMEOUT_MS } from '../../src/kafka/index.ts'
import { DEFAULT_DRAIN_MS, batchDelivery } from '../../src/kafka-source/index.ts'
import type { Batching, Outcome, SourceRecord, SourceRunner } from '../../src/kafka-source/index.ts'
import { LaneOrderLog } from '../helpers/lane-order.ts'
import { uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { committedOffsets, createTopic, endOffsets, messages, produce, runnerOf } from './helpers.ts'

const PARTITIONS = 4
const RECORDS = 200
/** Longer than the session and rebalance timeouts, and than both drains (revoke 5 s, close DEFAULT_DRAIN_MS). */
const SLOW_MS = 11_000
const LIMITS = { maxEvents: 20, maxBytes: 1024 * 1024, maxWaitMs: 20 }

/** One request as the sink saw it: its events' [partition, offset], when it arrived, and how it ended. */
interface Request {
  readonly events: ReadonlyArray<readonly [number, number]>
  readonly arrived: number
  ended?: { readonly kind: 'answered' | 'cut'; readonly at: number }
}

/** A sink for batched requests that answers 202 after `slowMs` (0: at once), unless the sender hangs up first. */
async function startSlowSink(): Promise<{
  url: string
  requests: Request[]
  order: LaneOrderLog
  pending: () => number
  slowMs: number
  close(): Promise<void>
}> {
  const requests: Request[] = []
  const order = new LaneOrderLog()
  let seq = 0
  const sink = {
    url: '',
    requests,
    order,
    pending: () => requests.filter(r => r.ended === undefined).length,
    slowMs: SLOW_MS,
    close: async () => {
      server.closeAllConnections()
      server.close()
    }
  }
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const events = (JSON.parse(Buffer.concat(chunks).toString()) as Array<{ id: string }>).map(e => {
        const match = /^partition:(\d+)\/offset:(\d+)$/.exec(e.id)
        assert.ok(match, e.id)
        return [Number(match[1]), Number(match[2])] as const
      })
      // Sequence numbers, not clock times: what happened before what at the sink.
      const request: Request = { events, arrived: seq++ }
      requests.push(request)
      const lane = `p${events[0]![0]}`
      order.arrived(
        lane,
        events.map(e => e[1])
      )
      const answer = (): void => {
        if (request.ended !== undefined) return
        request.ended = { kind: 'answered', at: seq++ }
        order.answered(
          lane,
          events.map(e => e[1])
        )
        res.writeHead(202).end()
      }
      res.on('close', () => {
        clearTimeout(timer)
        if (!res.writableFinished && request.ended === undefined) request.ended = { kind: 'cut', at: seq++ }
      })
      const timer = setTimeout(answer, sink.slowMs)
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  sink.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  return sink
}

describe('batched delivery to a sink slower than the group timeouts, a member joining and leaving', () => {
  const cleanup: Array<() => Promise<unknown>> = []
  after(async () => {
    for (const c of cleanup.reverse()) await c().catch(() => undefined)
  })

  for (const ordering of ['ordered', 'unordered'] as const) {
    it(`${ordering}: nothing lost; a batch comes again only when it (or one below it) was cut unanswered`, async t => {
      assert.ok(SLOW_MS > GROUP_SESSION_TIMEOUT_MS && SLOW_MS > GROUP_REBALANCE_TIMEOUT_MS)
      assert.ok(SLOW_MS > DEFAULT_DRAIN_MS)
      const name = uniqueName(`slow-batches-${ordering}`)
      await createTopic(name, PARTITIONS)
      const sink = await startSlowSink()
      cleanup.push(() => sink.close())

      /** A runner of the source on `dispatcherId`, with a Deliverer of its own, as a dispatcher process has. */
      const runner = (dispatcherId: string): SourceRunner => {
        const deliverer = new Deliverer()
        const target: DeliveryTarget = {
          sourceKey: `KafkaSource/default/${name}`,
          sink: { uri: sink.url },
          policy: resolveDeliveryPolicy({ retry: 3, backoffPolicy: 'linear', backoffDelay: 'PT0.1S' })
        }
        const send = batchDelivery(deliverer, { namespace: 'default', name }, {})
        const batching: Batching = {
          limits: LIMITS,
          deliver: (records, signal, wireSignal) => send(records, signal, wireSignal, target)
        }
        const single = (_record: SourceRecord): Promise<Outcome> => Promise.reject(new Error('not used when batching'))
        const r = runnerOf(name, single, { ordering, maxInFlight: 8 }, { batching, dispatcherId })
        cleanup.push(
          () => r.close({ drainMs: 0 }),
          () => deliverer.close()
        )
        return r
      }
      const step = (what: string): void =>
        t.diagnostic(`${what}: ${sink.requests.length} requests, ${sink.pending()} waiting for their answer`)

      await produce(name, messages(RECORDS, PARTITIONS))
      const a = runner('dispatcher-0')
      await eventually(async () => (sink.pending() > 0 ? true : undefined), 60_000, 'a batch at the slow sink')
      step('dispatcher-0 alone')

      // A member joins while the sink holds batches: dispatcher-0's revoked partitions drain 5 s, are cut, and are
      // released; the new member starts from the released commit.
      const b = runner('dispatcher-1')
      await eventually(
        async () => {
          const [joined] = b.status().members
          return joined !== undefined && joined.partitions.some(p => p.inFlight > 0) ? true : undefined
        },
        60_000,
        'the joined member sending its first batch'
      )
      step('dispatcher-1 joined and sending')

      // It leaves again with batches on the wire: its close drains DEFAULT_DRAIN_MS, cuts them, commits, leaves.
      await b.close({ leaveGroup: true })
      await eventually(
        async () => {
          const [only] = a.status().members
          return only?.partitions.length === PARTITIONS ? true : undefined
        },
        60_000,
        'dispatcher-0 holding every partition again'
      )
      step('dispatcher-1 left')
      sink.slowMs = 0

      const ends = await endOffsets(name, PARTITIONS)
      assert.equal(
        ends.reduce((n, e) => n + Number(e), 0),
        RECORDS
      )
      const answeredCount = (): Map<string, number> => {
        const count = new Map<string, number>()
        for (const r of sink.requests) {
          if (r.ended?.kind !== 'answered') continue
          for (const [p, o] of r.events) count.set(`${p}/${o}`, (count.get(`${p}/${o}`) ?? 0) + 1)
        }
        return count
      }
      const unanswered = (): string[] => {
        const count = answeredCount()
        return ends.flatMap((end, p) =>
          Array.from({ length: Number(end) }, (_, o) => `${p}/${o}`).filter(id => !count.has(id))
        )
      }
      await eventually(
        async () => (unanswered().length === 0 ? true : undefined),
        60_000,
        'every record answered'
      ).catch(() => undefined)
      assert.deepEqual(unanswered().slice(0, 10), [], 'records never answered (lost)')
      await eventually(
        async () => {
          const committed = await committedOffsets(name, name, PARTITIONS)
          return committed.every((c, i) => c === ends[i]) ? true : undefined
        },
        60_000,
        'the group committed at the log end'
      )

      const cut = sink.requests.filter(r => r.ended?.kind === 'cut')
      const answered = sink.requests.filter(r => r.ended?.kind === 'answered')
      const received = sink.requests.reduce((n, r) => n + r.events.length, 0)
      t.diagnostic(
        `${ordering}: ${RECORDS} records, ${received} events in ${sink.requests.length} requests: ${answered.length} answered, ${cut.length} cut`
      )
      assert.ok(cut.length > 0, 'batches on the wire at a hand-over were cut (the regime this test is for)')
      // Every second answer of a record follows a cut request of its partition at or below it, cut before.
      const firstAnswer = new Map<string, number>()
      const unexplained: string[] = []
      for (const r of [...answered].sort((x, y) => x.ended!.at - y.ended!.at)) {
        for (const [p, o] of r.events) {
          const id = `${p}/${o}`
          if (!firstAnswer.has(id)) {
            firstAnswer.set(id, r.ended!.at)
            continue
          }
          const explained = cut.some(c => c.ended!.at < r.arrived && c.events[0]![0] === p && c.events[0]![1] <= o)
          if (!explained) unexplained.push(id)
        }
      }
      assert.deepEqual(unexplained.slice(0, 10), [], `${unexplained.length} handled records delivered again`)
      // A batch is handled whole: of an answered batch, all of it comes again or nothing (no commit inside it).
      const split = answered.filter(r => {
        const later = new Set(
          sink.requests.filter(x => x.arrived > r.ended!.at).flatMap(x => x.events.map(([p, o]) => `${p}/${o}`))
        )
        const again = r.events.filter(([p, o]) => later.has(`${p}/${o}`)).length
        return again > 0 && again < r.events.length
      })
      assert.deepEqual(
        split.map(r => r.events[0]),
        [],
        'answered batches partly delivered again'
      )
      if (ordering === 'ordered') {
        const twice = [...answeredCount()].filter(([, n]) => n > 1).map(([id]) => id)
        assert.deepEqual(twice.slice(0, 10), [], 'ordered: a record answered twice')
        const report = sink.order.check()
        assert.deepEqual(report.violations.slice(0, 10), [], 'order per partition')
      }
    })
  }
})
