import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { ensureTopics } from '../../src/kafka/index.ts'
import { startControllerProcess } from '../helpers/controllers.ts'
import type { ControllerProcess } from '../helpers/controllers.ts'
import { http } from '../helpers/http.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { startDispatcherProcess } from '../helpers/dispatchers.ts'
import type { DispatcherProcess } from '../helpers/dispatchers.ts'

const KS = '/apis/sources.knative.dev/v1beta1/namespaces/default/kafkasources'
const DISPATCHERS = '/apis/shoal.dev/v1alpha1/dispatchers'
const LIVENESS = ['--liveness-timeout', '3s']

interface Source {
  metadata: { name: string }
  status: {
    placements?: Array<{ podName: string; vreplicas: number }>
    conditions: Array<{ type: string; status: string; message?: string }>
  }
}

const source = (name: string, topic: string, consumers: number) =>
  `apiVersion: sources.knative.dev/v1beta1\nkind: KafkaSource\nmetadata: {name: ${name}}\nspec:\n  bootstrapServers: [${brokers().join(',')}]\n  topics: [${topic}]\n  consumers: ${consumers}\n  sink: {uri: "http://127.0.0.1:9/"}\n`

const condition = (s: Source, type: string) => s.status.conditions.find(c => c.type === type)

async function sources(url: string): Promise<Source[]> {
  return (await http('GET', `${url}${KS}`)).body.items as Source[]
}

/** Every source fully placed (Scheduled=True), and the placements. */
async function allScheduled(url: string, count: number): Promise<Source[] | undefined> {
  const items = await sources(url)
  if (items.length !== count) return undefined
  return items.every(s => condition(s, 'Scheduled')?.status === 'True') ? items : undefined
}

describe('scheduling KafkaSources on dispatchers across zones', () => {
  const prefix = uniqueName('sched')
  const topic = `${prefix}-topic`
  let controller: ControllerProcess
  const dispatchers = new Map<string, DispatcherProcess>()
  const zoneOf = new Map<string, string>()

  before(async () => {
    await ensureTopics({ brokers: brokers(), clientId: 'sched-test' }, [{ name: topic, partitions: 12, configs: {} }])
    controller = await startControllerProcess(prefix, LIVENESS)
    const zones = ['a', 'b', 'c']
    await Promise.all(
      Array.from({ length: 6 }, (_, i) => {
        const zone = zones[i % 3]!
        const id = `dispatcher-${i}`
        zoneOf.set(id, zone)
        return startDispatcherProcess(prefix, id, zone, `${zone}-node-${i < 3 ? 1 : 2}`, 10, LIVENESS).then(d =>
          dispatchers.set(id, d)
        )
      })
    )
  })

  after(async () => {
    // The controller first: with no scheduler left, stopping dispatchers moves nothing onto the others.
    await controller?.stop()
    await Promise.all([...dispatchers.values()].map(d => d.stop()))
  })

  it('places 40 vreplicas of 20 sources within capacity, each source across zones', async () => {
    await eventually(
      async () => {
        const live = (await http('GET', `${controller.url}${DISPATCHERS}`)).body.items
        return live.filter((d: { status: { state: string } }) => d.status.state === 'Ready').length === 6
          ? true
          : undefined
      },
      60_000,
      'six live dispatchers'
    )
    for (let i = 0; i < 20; i++) {
      const created = await http('POST', `${controller.url}${KS}`, source(`s-${i}`, topic, 2))
      assert.equal(created.status, 201, JSON.stringify(created.body))
    }
    const placed = await eventually(() => allScheduled(controller.url, 20), 60_000, 'all sources scheduled')
    const used = new Map<string, number>()
    for (const s of placed) {
      const placements = s.status.placements ?? []
      assert.equal(
        placements.reduce((n, p) => n + p.vreplicas, 0),
        2,
        s.metadata.name
      )
      const zones = new Set(placements.map(p => zoneOf.get(p.podName)))
      assert.equal(zones.size, 2, `${s.metadata.name} spreads over two zones: ${JSON.stringify(placements)}`)
      for (const p of placements) used.set(p.podName, (used.get(p.podName) ?? 0) + p.vreplicas)
    }
    for (const [id, n] of used) assert.ok(n <= 10, `${id} holds ${n} > capacity 10`)
    // The group offsets were committed at creation (Knative's InitialOffsetsCommitted), so every source is Ready.
    const ready = await eventually(
      async () => {
        const items = await sources(controller.url)
        return items.every(s => condition(s, 'Ready')?.status === 'True') ? items : undefined
      },
      60_000,
      'every source Ready'
    )
    for (const s of ready) assert.equal(condition(s, 'InitialOffsetsCommitted')?.status, 'True')
    // The dispatchers report the same load in their heartbeats: they read their contracts.
    await eventually(
      async () => {
        const live = (await http('GET', `${controller.url}${DISPATCHERS}`)).body.items as Array<{
          metadata: { name: string }
          status: { used?: { consumers: number } }
        }>
        return live.every(d => (d.status.used?.consumers ?? 0) === (used.get(d.metadata.name) ?? 0)) ? true : undefined
      },
      60_000,
      'dispatchers to report their contracts'
    )
  })

  it('moves a SIGKILLed dispatcher’s vreplicas to live ones after the liveness timeout', async () => {
    await dispatchers.get('dispatcher-0')!.stop('SIGKILL')
    dispatchers.delete('dispatcher-0')
    const moved = await eventually(
      async () => {
        const items = await allScheduled(controller.url, 20)
        return items?.every(s => !(s.status.placements ?? []).some(p => p.podName === 'dispatcher-0'))
          ? items
          : undefined
      },
      60_000,
      'placements off dispatcher-0'
    )
    for (const s of moved)
      assert.equal(
        (s.status.placements ?? []).reduce((n, p) => n + p.vreplicas, 0),
        2
      )
    const dead = (await http('GET', `${controller.url}${DISPATCHERS}/dispatcher-0`)).body
    assert.equal(dead.status.state, 'Dead')
  })

  it('after two dispatchers join, an approved rebalance raises the score and makes exactly the listed moves', async () => {
    for (const [id, zone] of [
      ['dispatcher-6', 'a'],
      ['dispatcher-7', 'b']
    ] as const) {
      zoneOf.set(id, zone)
      dispatchers.set(id, await startDispatcherProcess(prefix, id, zone, `${zone}-node-3`, 10, LIVENESS))
    }
    // The proposal is computed from the pool the leader knows: wait until it knows both new dispatchers.
    await eventually(
      async () => {
        const live = (await http('GET', `${controller.url}${DISPATCHERS}`)).body.items
        return live.filter((d: { status: { state: string } }) => d.status.state === 'Ready').length === 7
          ? true
          : undefined
      },
      60_000,
      'seven live dispatchers'
    )
    const proposal = await eventually(
      async () => {
        const answer = await http('GET', `${controller.url}/shoal/v1/rebalance`)
        return answer.status === 200 && answer.body.moves.length > 0 ? answer.body : undefined
      },
      60_000,
      'a rebalance proposal with moves'
    )
    assert.ok(proposal.scoreAfter > proposal.scoreBefore, JSON.stringify(proposal))
    const before = new Map((await sources(controller.url)).map(s => [s.metadata.name, s.status.placements ?? []]))
    const applied = await http(
      'POST',
      `${controller.url}/shoal/v1/rebalance`,
      JSON.stringify({ revision: proposal.revision }),
      'application/json'
    )
    assert.equal(applied.status, 200, JSON.stringify(applied.body))
    // Expected: the placements before, with every listed move applied, and nothing else.
    const expected = new Map([...before].map(([name, ps]) => [name, new Map(ps.map(p => [p.podName, p.vreplicas]))]))
    for (const move of proposal.moves as Array<{ source: string; from: string; to: string; vreplicas: number }>) {
      const name = move.source.split('/')[2]!
      const m = expected.get(name)!
      m.set(move.from, (m.get(move.from) ?? 0) - move.vreplicas)
      m.set(move.to, (m.get(move.to) ?? 0) + move.vreplicas)
      if (m.get(move.from) === 0) m.delete(move.from)
    }
    await eventually(
      async () => {
        const now = await sources(controller.url)
        const same = now.every(s => {
          const want = expected.get(s.metadata.name)!
          const got = new Map((s.status.placements ?? []).map(p => [p.podName, p.vreplicas]))
          return got.size === want.size && [...want].every(([k, v]) => got.get(k) === v)
        })
        return same ? true : undefined
      },
      60_000,
      'exactly the listed moves'
    )
    // A second approval of the same, now stale, revision is refused.
    const stale = await http(
      'POST',
      `${controller.url}/shoal/v1/rebalance`,
      JSON.stringify({ revision: proposal.revision }),
      'application/json'
    )
    assert.equal(stale.status, 409)
  })
})

describe('scheduling with too little capacity', () => {
  it('keeps the surplus pending with a clear condition, and places it when a dispatcher joins', async () => {
    const prefix = uniqueName('pending')
    const topic = `${prefix}-topic`
    await ensureTopics({ brokers: brokers(), clientId: 'pending-test' }, [{ name: topic, partitions: 12, configs: {} }])
    const controller = await startControllerProcess(prefix, LIVENESS)
    const started: DispatcherProcess[] = []
    try {
      started.push(await startDispatcherProcess(prefix, 'dispatcher-0', 'a', 'a-1', 4, LIVENESS))
      assert.equal((await http('POST', `${controller.url}${KS}`, source('big', topic, 6))).status, 201)
      const pending = await eventually(
        async () => {
          const s = (await http('GET', `${controller.url}${KS}/big`)).body as Source
          // A pass run before the leader's view has dispatcher-0's heartbeat leaves all 6 pending: wait for the one
          // that fills it.
          const placed = (s.status.placements ?? []).reduce((n, p) => n + p.vreplicas, 0)
          return condition(s, 'Scheduled')?.status === 'False' && placed === 4 ? s : undefined
        },
        60_000,
        'big pending with dispatcher-0 full'
      )
      assert.match(condition(pending, 'Scheduled')!.message ?? '', /\b2 of 6 vreplicas\b/)
      assert.equal(condition(pending, 'Ready')?.status, 'False')
      assert.equal(
        (pending.status.placements ?? []).reduce((n, p) => n + p.vreplicas, 0),
        4
      )

      started.push(await startDispatcherProcess(prefix, 'dispatcher-1', 'b', 'b-1', 10, LIVENESS))
      const placed = await eventually(
        async () => {
          const s = (await http('GET', `${controller.url}${KS}/big`)).body as Source
          return condition(s, 'Scheduled')?.status === 'True' ? s : undefined
        },
        60_000,
        'big placed once capacity appears'
      )
      assert.equal(
        (placed.status.placements ?? []).reduce((n, p) => n + p.vreplicas, 0),
        6
      )
      // Ready also needs InitialOffsetsCommitted, which the reconciler observes on its own time.
      const ready = await eventually(
        async () => {
          const s = (await http('GET', `${controller.url}${KS}/big`)).body as Source
          return condition(s, 'Ready')?.status === 'True' ? s : undefined
        },
        60_000,
        'big Ready'
      )
      assert.equal(condition(ready, 'Ready')?.status, 'True')
    } finally {
      await controller.stop()
      await Promise.all(started.map(d => d.stop()))
    }
  })
})
