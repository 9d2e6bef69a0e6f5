import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { Scheduler, loadSchedulerConfig } from '../../src/scheduler/index.ts'
import type { DispatcherInfo, DispatcherState, Placement, SchedulerConfig, VPod } from '../../src/scheduler/index.ts'
import type { SlotKind } from '../../src/store/index.ts'
import { asMap, checkInvariants, total } from './helpers.ts'

const PROFILES: Record<string, SchedulerConfig> = {
  ha: loadSchedulerConfig('ha'),
  compact: loadSchedulerConfig('compact')
}
const RUNS = Number(process.env['SHOAL_PROPERTY_RUNS'] ?? 300)

interface DispatcherSpec {
  readonly zone: number
  readonly node: number
  readonly consumer: number
  readonly schedule: number
  readonly state: DispatcherState
}

const dispatcherSpec: fc.Arbitrary<DispatcherSpec> = fc.record({
  zone: fc.integer({ min: 0, max: 3 }),
  node: fc.integer({ min: 0, max: 2 }),
  consumer: fc.integer({ min: 0, max: 8 }),
  schedule: fc.integer({ min: 0, max: 4 }),
  state: fc.constantFrom<DispatcherState>('ready', 'ready', 'ready', 'ready', 'cordoned', 'draining')
})

function toDispatcher(spec: DispatcherSpec, ordinal: number): DispatcherInfo {
  return {
    id: `dispatcher-${ordinal}`,
    ordinal,
    zone: `z${spec.zone}`,
    node: `z${spec.zone}-n${spec.node}`,
    capacity: { consumer: spec.consumer, schedule: spec.schedule },
    state: spec.state
  }
}

/** Source keys 0–11: a third of them PingSources (schedule slots). */
function vpodOf(key: number, vreplicas: number, max: number | undefined): VPod {
  const schedule = key % 3 === 2
  return {
    key: schedule ? `PingSource/default/p${key}` : `KafkaSource/default/k${key}`,
    slot: schedule ? 'schedule' : 'consumer',
    vreplicas: schedule ? Math.min(vreplicas, 3) : vreplicas,
    ...(max === undefined ? {} : { maxVReplicas: max })
  }
}

type Op =
  | { readonly op: 'upsert'; readonly key: number; readonly vreplicas: number; readonly max: number | undefined }
  | { readonly op: 'remove'; readonly key: number }
  | { readonly op: 'kill' | 'cordon' | 'drain' | 'uncordon'; readonly index: number }
  | { readonly op: 'add'; readonly spec: DispatcherSpec }
  | { readonly op: 'capacity'; readonly index: number; readonly consumer: number; readonly schedule: number }
  | { readonly op: 'schedule' }

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      op: fc.constant('upsert' as const),
      key: fc.integer({ min: 0, max: 11 }),
      vreplicas: fc.integer({ min: 0, max: 12 }),
      max: fc.option(fc.integer({ min: 1, max: 12 }), { nil: undefined })
    })
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('remove' as const), key: fc.integer({ min: 0, max: 11 }) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constantFrom('kill' as const, 'cordon' as const, 'drain' as const, 'uncordon' as const),
      index: fc.nat()
    })
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('add' as const), spec: dispatcherSpec }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('capacity' as const),
      index: fc.nat(),
      consumer: fc.integer({ min: 0, max: 8 }),
      schedule: fc.integer({ min: 0, max: 4 })
    })
  },
  { weight: 4, arbitrary: fc.constant({ op: 'schedule' as const }) }
)

const scenario = fc.record({
  profile: fc.constantFrom('ha', 'compact'),
  pool: fc.array(dispatcherSpec, { maxLength: 10 }),
  ops: fc.array(opArb, { minLength: 1, maxLength: 40 })
})

/** The world as the test keeps it, beside the scheduler: the pool and the sources it was given. */
class World {
  dispatchers: DispatcherInfo[]
  readonly vpods = new Map<string, VPod>()
  #nextOrdinal: number

  constructor(pool: readonly DispatcherSpec[]) {
    this.dispatchers = pool.map(toDispatcher)
    this.#nextOrdinal = pool.length
  }

  /** Applies an op to the world; returns the keys of sources it changed (for the scheduler). */
  apply(scheduler: Scheduler, op: Op, changed: Set<string>): void {
    const pick = (index: number) => this.dispatchers[index % Math.max(1, this.dispatchers.length)]
    const setState = (index: number, state: DispatcherState) => {
      const d = pick(index)
      if (d === undefined) return
      this.dispatchers = this.dispatchers.map(x => (x === d ? { ...d, state } : x))
    }
    switch (op.op) {
      case 'upsert': {
        const v = vpodOf(op.key, op.vreplicas, op.max)
        const old = this.vpods.get(v.key)
        if (old === undefined || old.vreplicas !== v.vreplicas || old.maxVReplicas !== v.maxVReplicas)
          changed.add(v.key)
        this.vpods.set(v.key, v)
        scheduler.upsertVPod(v)
        return
      }
      case 'remove': {
        for (const key of [vpodOf(op.key, 0, undefined).key]) {
          if (this.vpods.delete(key)) changed.add(key)
          scheduler.removeVPod(key)
        }
        return
      }
      case 'kill': {
        const d = pick(op.index)
        this.dispatchers = this.dispatchers.filter(x => x !== d)
        break
      }
      case 'cordon':
        setState(op.index, 'cordoned')
        break
      case 'drain':
        setState(op.index, 'draining')
        break
      case 'uncordon':
        setState(op.index, 'ready')
        break
      case 'add':
        this.dispatchers = [...this.dispatchers, toDispatcher(op.spec, this.#nextOrdinal++)]
        break
      case 'capacity': {
        const d = pick(op.index)
        if (d === undefined) return
        const capacity = { consumer: op.consumer, schedule: op.schedule }
        this.dispatchers = this.dispatchers.map(x => (x === d ? { ...d, capacity } : x))
        break
      }
      case 'schedule':
        return
    }
    scheduler.setDispatchers(this.dispatchers)
  }
}

interface Checkpoint {
  readonly dispatchers: readonly DispatcherInfo[]
  readonly placements: ReadonlyMap<string, readonly Placement[]>
  readonly targets: ReadonlyMap<string, number>
  readonly pending: ReadonlySet<string>
}

function checkpoint(scheduler: Scheduler, world: World): Checkpoint {
  const placements = new Map<string, readonly Placement[]>()
  const targets = new Map<string, number>()
  const pending = new Set<string>()
  for (const v of world.vpods.values()) {
    placements.set(v.key, scheduler.placements(v.key) ?? [])
    targets.set(v.key, Math.min(v.vreplicas, v.maxVReplicas ?? Infinity))
    if (scheduler.pending(v.key) !== undefined) pending.add(v.key)
  }
  return { dispatchers: world.dispatchers, placements, targets, pending }
}

/**
 * Placements stay unless their dispatcher went, was cordoned or drained, or shrank below its use; the source
 * shrank; or a move restored availability (the source sat in one zone and now sits in two).
 */
function checkSticky(before: Checkpoint, scheduler: Scheduler, world: World): void {
  const now = new Map(world.dispatchers.map(d => [d.id, d]))
  const zoneBefore = new Map(before.dispatchers.map(d => [d.id, d.zone]))
  const usedBefore = new Map<string, Record<SlotKind, number>>()
  for (const [key, placements] of before.placements) {
    const slot: SlotKind = key.startsWith('PingSource/') ? 'schedule' : 'consumer'
    for (const p of placements) {
      const u = usedBefore.get(p.podName) ?? { consumer: 0, schedule: 0 }
      u[slot] += p.vreplicas
      usedBefore.set(p.podName, u)
    }
  }
  for (const [key, placements] of before.placements) {
    const v = world.vpods.get(key)
    if (v === undefined) continue
    const after = asMap(scheduler.placements(key))
    const target = Math.min(v.vreplicas, v.maxVReplicas ?? Infinity)
    const zones = (ps: Iterable<string>) => new Set([...ps].map(id => zoneBefore.get(id) ?? now.get(id)?.zone))
    const restoredAvailability =
      total(placements) >= 2 && zones(placements.map(p => p.podName)).size === 1 && zones(after.keys()).size >= 2
    for (const p of placements) {
      const left = after.get(p.podName) ?? 0
      if (left >= p.vreplicas) continue
      const d = now.get(p.podName)
      const lost = d === undefined || d.state !== 'ready'
      const overCapacity = d !== undefined && (usedBefore.get(d.id)?.[v.slot] ?? 0) > d.capacity[v.slot]
      const shrank = target < total(placements)
      assert.ok(
        lost || overCapacity || shrank || restoredAvailability,
        `${key} lost ${p.vreplicas - left} vreplica(s) on ${p.podName} without a reason`
      )
    }
  }
}

function run(profile: string, pool: readonly DispatcherSpec[], ops: readonly Op[]): Scheduler {
  const scheduler = new Scheduler({ config: PROFILES[profile]! })
  const world = new World(pool)
  scheduler.setDispatchers(world.dispatchers)
  let before = checkpoint(scheduler, world)
  let changed = new Set<string>()
  let idle = true
  for (const op of [...ops, { op: 'schedule' as const }]) {
    if (op.op !== 'schedule') {
      world.apply(scheduler, op, changed)
      idle = false
      continue
    }
    const result = scheduler.schedule()
    checkInvariants(scheduler, world.dispatchers, world.vpods.values())
    checkSticky(before, scheduler, world)

    // A pass recomputes only what changed: sources changed, sources on lost or shrunk dispatchers, and — when
    // slots may have been freed — pending and one-zone sources.
    if (idle) assert.equal(result.stats.recomputed, 0, 'a pass with nothing new recomputes nothing')
    const now = new Map(world.dispatchers.map(d => [d.id, d]))
    const affected = new Set(changed)
    for (const [key, placements] of before.placements) {
      for (const p of placements) {
        const d = now.get(p.podName)
        if (
          d === undefined ||
          d.state !== 'ready' ||
          d.capacity.consumer < before.dispatchers.find(x => x.id === d.id)!.capacity.consumer ||
          d.capacity.schedule < before.dispatchers.find(x => x.id === d.id)!.capacity.schedule
        )
          affected.add(key)
      }
    }
    const mayHaveFreed = changed.size > 0 || world.dispatchers !== before.dispatchers
    if (mayHaveFreed) {
      for (const key of before.pending) affected.add(key)
      for (const [key, placements] of before.placements) {
        const zones = new Set(placements.map(p => before.dispatchers.find(d => d.id === p.podName)?.zone))
        if (total(placements) >= 2 && zones.size === 1) affected.add(key)
      }
    }
    for (const change of result.changes)
      assert.ok(affected.has(change.key), `${change.key} changed though nothing touched it`)
    assert.ok(result.stats.recomputed <= affected.size, `recomputed ${result.stats.recomputed} > ${affected.size}`)

    before = checkpoint(scheduler, world)
    changed = new Set()
    idle = true
  }
  return scheduler
}

describe('Scheduler properties', () => {
  it('keeps capacity, stickiness, availability, pending and incrementality over random operations', () => {
    fc.assert(
      fc.property(scenario, ({ profile, pool, ops }) => {
        run(profile, pool, ops)
      }),
      { numRuns: RUNS }
    )
  })

  it('is deterministic: the same inputs give the same placements', () => {
    fc.assert(
      fc.property(scenario, ({ profile, pool, ops }) => {
        const a = run(profile, pool, ops)
        const b = run(profile, pool, ops)
        assert.deepEqual(
          [...a.keys()].map(k => a.placements(k)),
          [...b.keys()].map(k => b.placements(k))
        )
      }),
      { numRuns: Math.ceil(RUNS / 5) }
    )
  })

  it('removes per the removal priorities when a source shrinks: most loaded zone, then node (ha), then highest ordinal', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('ha', 'compact'),
        fc.array(dispatcherSpec, { minLength: 1, maxLength: 10 }),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 11 }), fc.integer({ min: 1, max: 12 })), {
          minLength: 1,
          maxLength: 8
        }),
        fc.nat(),
        (profile, pool, sources, which) => {
          const dispatchers = pool.map(toDispatcher)
          const byId = new Map(dispatchers.map(d => [d.id, d]))
          const scheduler = new Scheduler({ config: PROFILES[profile]! })
          scheduler.setDispatchers(dispatchers)
          const vpods = sources.map(([key, n]) => vpodOf(key * 3, n, undefined))
          for (const v of vpods) scheduler.upsertVPod(v)
          scheduler.schedule()
          const v = vpods[which % vpods.length]!
          const before = scheduler.placements(v.key)!
          const placed = total(before)
          if (placed < 2) return
          // The removal descent: the zone with the most of the source (then the highest ordinal), never
          // emptying the second of two zones; in it the node with the most (ha only; then the highest ordinal);
          // on it the highest ordinal.
          const holders = before.map(p => ({ ...byId.get(p.podName)!, vreplicas: p.vreplicas }))
          const best = <T>(items: T[], key: (item: T) => number[]): T =>
            items.reduce((a, b) => {
              const ka = key(a)
              const kb = key(b)
              for (let i = 0; i < ka.length; i++) if (ka[i] !== kb[i]) return kb[i]! > ka[i]! ? b : a
              return b
            })
          const sum = (items: typeof holders) => items.reduce((n, d) => n + d.vreplicas, 0)
          const highest = (items: typeof holders) => Math.max(...items.map(d => d.ordinal))
          const groups = (items: typeof holders, by: (d: (typeof holders)[number]) => string) => {
            const out = new Map<string, typeof holders>()
            for (const d of items) out.set(by(d), [...(out.get(by(d)) ?? []), d])
            return [...out.values()]
          }
          let zones = groups(holders, d => d.zone)
          if (zones.length === 2 && placed - 1 >= 2) {
            const kept = zones.filter(z => sum(z) > 1)
            if (kept.length > 0) zones = kept
          }
          const zone = best(zones, z => [sum(z), highest(z)])
          const node = best(
            groups(zone, d => d.node),
            n => (profile === 'ha' ? [sum(n), highest(n)] : [highest(n)])
          )
          const expected = best(node, d => [d.ordinal]).id

          // Besides the source, only pending and one-zone sources may be retried with the slot it frees.
          const waiting = vpods.filter(x => {
            const placements = scheduler.placements(x.key)!
            const zones = new Set(placements.map(p => byId.get(p.podName)!.zone))
            return scheduler.pending(x.key) !== undefined || (total(placements) >= 2 && zones.size === 1)
          })
          scheduler.upsertVPod({ ...v, vreplicas: placed - 1 })
          const result = scheduler.schedule()
          assert.ok(result.stats.recomputed <= 1 + new Set(waiting.map(x => x.key).filter(k => k !== v.key)).size)
          const after = asMap(scheduler.placements(v.key))
          const removedFrom = before.filter(p => (after.get(p.podName) ?? 0) < p.vreplicas).map(p => p.podName)
          assert.deepEqual(removedFrom, [expected])
        }
      ),
      { numRuns: RUNS }
    )
  })

  it('restores placements without moving any, and rebalances with exactly the moves it lists', () => {
    fc.assert(
      fc.property(scenario, fc.integer({ min: 1, max: 30 }), ({ profile, pool, ops }, maxMoves) => {
        const scheduler = run(profile, pool, ops)
        // The world after run(): rebuild it the same way to know the pool and sources.
        const world = new World(pool)
        for (const op of ops) world.apply(new Scheduler(), op, new Set())
        const keys = [...scheduler.keys()]

        const restored = new Scheduler({ config: PROFILES[profile]! })
        restored.setDispatchers(world.dispatchers)
        for (const v of world.vpods.values()) restored.upsertVPod(v)
        restored.restore(
          keys.map(key => ({ key, slot: world.vpods.get(key)!.slot, placements: scheduler.placements(key)! }))
        )
        const pass = restored.schedule()
        for (const change of pass.changes)
          assert.deepEqual(change.placements, change.previous, `${change.key} moved on restore`)
        for (const key of keys) assert.deepEqual(restored.placements(key), scheduler.placements(key))

        const proposal = scheduler.proposeRebalance({ maxMoves })
        const before = new Map(keys.map(key => [key, asMap(scheduler.placements(key))]))
        assert.equal(scheduler.balancedness(), proposal.scoreBefore)
        if (proposal.moves.length > 0) assert.ok(proposal.scoreAfter > proposal.scoreBefore)
        else assert.equal(proposal.scoreAfter, proposal.scoreBefore)
        scheduler.applyRebalance(proposal)
        checkInvariants(scheduler, world.dispatchers, world.vpods.values())
        assert.equal(scheduler.balancedness(), proposal.scoreAfter)
        for (const move of proposal.moves) {
          const map = before.get(move.source)!
          map.set(move.from, (map.get(move.from) ?? 0) - move.vreplicas)
          map.set(move.to, (map.get(move.to) ?? 0) + move.vreplicas)
        }
        for (const key of keys) {
          const expected = new Map([...before.get(key)!].filter(([, n]) => n !== 0))
          assert.deepEqual(asMap(scheduler.placements(key)), expected, key)
        }
      }),
      { numRuns: RUNS }
    )
  })
})
