import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { CloudEvent, DeliveryOutcome } from '../../src/delivery/index.ts'
import type { PlaneContract, PlaneHost, PlaneServices, ResourceListener } from '../../src/plane/index.ts'
import { PingSourcePlane } from '../../src/ping-source/index.ts'
import type { StoredObject } from '../../src/store/index.ts'

// A PingSource whose sink stops resolving for a version and resolves again, driven through a fake host (no
// Kafka): every tick must be delivered, once, whatever is in flight when the versions change.

const KEY = 'PingSource/default/p'
const RESOLVED = { uri: 'http://127.0.0.1:9/' }
const UNRESOLVED = { ref: { apiVersion: 'eventing.knative.dev/v1', kind: 'Broker', name: 'default' } }

class FakeDispatcher {
  readonly delivered: number[] = []
  readonly notes: string[] = []
  // Deliveries held unanswered, while `hold` is set.
  readonly held: Array<() => void> = []
  hold = true
  readonly #listeners: ResourceListener[] = []
  readonly plane: PingSourcePlane
  readonly #created = new Date(Date.now() - 1_000).toISOString()

  constructor() {
    const services = {
      resources: { subscribe: (_kind: string, listener: ResourceListener) => this.#listeners.push(listener) },
      errors: { note: (_key: string, message: string) => this.notes.push(message) },
      deliverer: {
        deliver: (event: CloudEvent): Promise<DeliveryOutcome> =>
          new Promise(resolve => {
            const answer = () => {
              this.delivered.push(Date.parse(String(event.attributes['time'])))
              resolve({ kind: 'delivered', status: 200, attempts: 1 })
            }
            if (this.hold) this.held.push(answer)
            else answer()
          })
      }
    } as unknown as PlaneServices
    const host: PlaneHost = {
      dispatcherId: 'dispatcher-0',
      incarnation: 1,
      livenessTimeoutMs: 300,
      brokers: ['127.0.0.1:1'],
      serviceUrlTemplate: 'http://{name}.{namespace}.svc',
      services,
      log: () => {},
      heartbeatSoon: () => {}
    }
    this.plane = new PingSourcePlane(host, {})
  }

  /** Stores a version of the source at `offset` (its sink resolving or not) and gives it to the plane. */
  version(offset: number, sink: object): void {
    const object = {
      apiVersion: 'sources.knative.dev/v1',
      kind: 'PingSource',
      metadata: { name: 'p', namespace: 'default', uid: 'u1', generation: 1, creationTimestamp: this.#created },
      spec: { schedule: '* * * * * *', sink }
    } as unknown as StoredObject
    for (const listener of this.#listeners) listener({ key: KEY, offset: BigInt(offset), object })
    const placement = {
      dispatcher: 'dispatcher-0',
      source: KEY,
      slot: 'schedule',
      vreplicas: 1,
      resourceVersion: String(offset),
      epoch: 1,
      heldSince: '1'
    }
    this.plane.apply({
      contract: new Map([[KEY, placement]]),
      running: true,
      contractOffset: 5n,
      ended: []
    } as PlaneContract)
  }

  answerHeld(): void {
    for (const answer of this.held.splice(0)) answer()
  }
}

async function until(what: string, condition: () => boolean, deadlineMs = 10_000): Promise<void> {
  const deadline = Date.now() + deadlineMs
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise(resolve => setTimeout(resolve, 20))
  }
}

/** Every second from the first tick delivered to the last, each delivered exactly once. */
function assertEveryTickOnce(delivered: readonly number[]): void {
  const sorted = [...delivered].sort((a, b) => a - b)
  const first = sorted[0] as number
  const last = sorted.at(-1) as number
  const expected: string[] = []
  for (let at = first; at <= last; at += 1_000) expected.push(new Date(at).toISOString())
  assert.deepEqual(
    sorted.map(at => new Date(at).toISOString()),
    expected
  )
}

describe('PingSourcePlane: a version whose sink does not resolve', () => {
  it('holds its ticks while an older version still has one in flight: none is lost', async () => {
    const d = new FakeDispatcher()
    try {
      d.version(10, RESOLVED)
      await until('a tick of v1 in flight', () => d.held.length > 0)
      d.hold = false
      d.version(11, UNRESOLVED)
      await until('two ticks of v2 waiting', () => d.notes.length >= 2)
      // v1's tick is answered: the watermark must stay below the ticks v2 could not deliver.
      d.answerHeld()
      await until('a tick more of v2 waiting', () => d.notes.length >= 3)
      const resolvedAt = Date.now()
      d.version(12, RESOLVED)
      await until('a tick of v3 delivered', () => d.delivered.some(at => at > resolvedAt + 1_000))
      assertEveryTickOnce(d.delivered)
    } finally {
      await d.plane.close()
    }
  })

  it('when a later version resolves, fires again from the tick it held, not the older ticks in flight', async () => {
    const d = new FakeDispatcher()
    try {
      d.version(10, RESOLVED)
      await until('a tick of v1 in flight', () => d.held.length > 0)
      d.hold = false
      d.version(11, UNRESOLVED)
      await until('two ticks of v2 waiting', () => d.notes.length >= 2)
      const resolvedAt = Date.now()
      d.version(12, RESOLVED)
      await until('a tick of v3 delivered', () => d.delivered.some(at => at > resolvedAt))
      d.answerHeld()
      await until('a tick more of v3 delivered', () => d.delivered.some(at => at > resolvedAt + 1_000))
      assertEveryTickOnce(d.delivered)
    } finally {
      await d.plane.close()
    }
  })
})
