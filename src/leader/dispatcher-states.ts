import { DispatcherKind } from '../api/index.ts'
import type { MemberStatus } from '../dispatcher/index.ts'
import type { PoolMember } from '../pool/index.ts'
import type { DispatcherInfo } from '../scheduler/index.ts'
import { isDispatcher, ordinalOf } from '../store/index.ts'
import type { ResourceStore } from '../store/index.ts'
import type { SlotKind } from '../store/index.ts'

/** The dispatchers an operator cordoned (`spec.unschedulable` on their Dispatcher object). */
export function cordonedIn(store: Pick<ResourceStore, 'snapshot'>): Set<string> {
  return new Set(
    store
      .snapshot(k => k.startsWith(`${DispatcherKind.kind}/`))
      .filter(e => isDispatcher(e) && e.object.spec.unschedulable)
      .map(e => e.object.metadata.name)
  )
}

/** The live dispatchers as the scheduler sees them: cordoned, draining (the pool empties it) or ready. */
export function schedulerDispatchers(
  live: readonly MemberStatus[],
  cordoned: ReadonlySet<string>,
  draining: ReadonlySet<string>
): DispatcherInfo[] {
  return live.map(m => ({
    id: m.id,
    ordinal: ordinalOfMember(m),
    zone: m.zone,
    node: m.node,
    capacity: { consumer: m.capacity.consumers, schedule: m.capacity.schedules },
    state: cordoned.has(m.id) ? 'cordoned' : draining.has(m.id) ? 'draining' : 'ready'
  }))
}

/** The live dispatchers as the pool sizes them, by ordinal: what each holds, by the scheduler and by itself. */
export function poolMembers(
  live: readonly MemberStatus[],
  cordoned: ReadonlySet<string>,
  placed: (id: string) => Readonly<Record<SlotKind, number>> | undefined
): PoolMember[] {
  return live
    .map(m => {
      const used = placed(m.id) ?? { consumer: 0, schedule: 0 }
      return {
        id: m.id,
        ordinal: ordinalOfMember(m),
        capacity: { consumer: m.capacity.consumers, schedule: m.capacity.schedules },
        placed: { consumer: used.consumer, schedule: used.schedule },
        running: { consumer: m.used.consumers, schedule: m.used.schedules },
        cordoned: cordoned.has(m.id)
      }
    })
    .sort((a, b) => a.ordinal - b.ordinal)
}

function ordinalOfMember(m: MemberStatus): number {
  return Number.isFinite(m.ordinal) ? m.ordinal : ordinalOf(m.id)
}
