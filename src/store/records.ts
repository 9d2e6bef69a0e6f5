/**
 * The records the scheduler leader and the dispatchers exchange through Kafka (DESIGN §4). Every value is
 * JSON with the `shoal-schema` header (see codec.ts); these are their shapes.
 */
import type { SinkGateFigures, SinkOriginFigures } from '../api/index.ts'

/** Which of a dispatcher's two capacities a source uses: consumer slots (KafkaSource) or schedule slots (PingSource). */
export type SlotKind = 'consumer' | 'schedule'

/**
 * `shoal.contracts`, key `<dispatcherId>/<sourceKey>`: one placement of one source on one dispatcher.
 * A tombstone (null value) when the placement goes. The partition is `contractPartitionOf(dispatcherId)`.
 */
export interface ContractRecord {
  readonly dispatcher: string
  /** `Kind/namespace/name` of the source. */
  readonly source: string
  readonly slot: SlotKind
  /** How many vreplicas (consumer-group members, or 1 schedule) this dispatcher runs for the source. */
  readonly vreplicas: number
  /** The source's resourceVersion when this placement was written: the dispatcher reads that version. */
  readonly resourceVersion: string
  /** The scheduler leader's epoch: the highest epoch in the log plus one, per new leader. */
  readonly epoch: number
  /**
   * A schedule that changed hands: the dispatchers it left, newest first — the last one and, when it had itself
   * just come from others, theirs (at most 8). The new owner starts where the newest of them that fired it
   * stopped, as their heartbeats say (docs/ping-source.md#hand-over).
   */
  readonly movedFrom?: readonly MovedFrom[]
  /**
   * The offset of this dispatcher's contracts partition whose record first gave it the source, when this record
   * rewrites that placement (a new resourceVersion or vreplicas); absent on the first record, whose own offset it is.
   */
  readonly heldSince?: string
}

/** A dispatcher a schedule left. */
export interface MovedFrom {
  readonly dispatcher: string
  /** When it left, ISO-8601 on the scheduler leader's clock. */
  readonly at: string
  /** The offset of its contracts partition that had given it the schedule (absent in records of older versions). */
  readonly offset?: string
  /** Its incarnation as the scheduler leader knew it when the schedule left (absent: unknown). */
  readonly incarnation?: number
}

/** `shoal.placements`, key `<sourceKey>`: where a source's vreplicas are, and how many wait for capacity. */
export interface PlacementsRecord {
  readonly source: string
  readonly slot: SlotKind
  readonly placements: ReadonlyArray<{ readonly podName: string; readonly vreplicas: number }>
  readonly pending: number
  /** Why vreplicas are pending, when some are: `InsufficientCapacity` or `Unschedulable`. */
  readonly reason?: string
  /** The same, for people: `insufficient consumer capacity: 3 of 10 vreplicas unplaced`. */
  readonly message?: string
  readonly epoch: number
  /** Revision of the scheduler state this was computed from (rebalance proposals name it). */
  readonly revision: number
  /** When the Scheduled condition last changed (all placed ↔ some pending), ISO-8601. */
  readonly since: string
  /** The vreplicas the scheduler was asked for and who decided them (absent in records of older versions). */
  readonly scale?: ScaleRecord
  /**
   * A schedule with no placement: the holders it left (as `ContractRecord.movedFrom`), for the owner it gets when
   * capacity comes back, so that owner goes on where they stopped rather than from the source's creation.
   */
  readonly left?: readonly MovedFrom[]
}

/** Who set a source's vreplicas: its spec, its autoscaler, or a pause (0); and why an autoscaler holds. */
export interface ScaleRecord {
  readonly desired: number
  readonly by: 'spec' | 'autoscaler' | 'paused'
  /** Set while the autoscaler cannot read the lag and holds the scale: why. */
  readonly held?: string
}

/** `shoal.members`, key `<dispatcherId>`: a dispatcher's heartbeat. Judged by its broker append time. */
export interface MemberRecord {
  readonly id: string
  /** Grows with every start of this id; of two processes with one id, the higher incarnation wins. */
  readonly incarnation: number
  readonly ordinal: number
  readonly zone: string
  readonly node: string
  readonly capacity: { readonly consumers: number; readonly schedules: number }
  readonly used: { readonly consumers: number; readonly schedules: number }
  /** The highest contract offset this dispatcher has applied. */
  readonly contractOffset: string
  /** When the process started (its own clock; informational). */
  readonly startedAt: string
  /** Its PingSource plane's watermark: how far its schedules are handled, those it gave up and has not started. */
  readonly watermark?: ScheduleWatermark
  /**
   * Its per-sink flow control now, one entry per gate (a source that set the flow control annotations, and a sink
   * origin it sends to), the busiest first; absent when it has none (and in heartbeats of older versions).
   */
  readonly sinks?: readonly SinkFlowReport[]
  /** Set when `sinks` was cut short (more than MAX_SINK_REPORTS gates): the idlest gates are not named. */
  readonly sinksPartial?: true
  /**
   * Its connections to every sink origin it delivers to, over all its sources, the most stalled first (oldest
   * request in flight); absent when it has none (and in heartbeats of older versions).
   */
  readonly origins?: readonly SinkOriginFigures[]
  /** Set when `origins` was cut short (more than MAX_ORIGIN_REPORTS origins): the idlest are not named. */
  readonly originsPartial?: true
}

/** The most gates a heartbeat names: it is written every second (by default) and read by every controller and dispatcher. */
export const MAX_SINK_REPORTS = 100

/** The most sink origins a heartbeat names, for the same reason. */
export const MAX_ORIGIN_REPORTS = 100

/** One flow control gate of a dispatcher as its heartbeat carries it (`MemberRecord.sinks`). */
export interface SinkFlowReport extends SinkGateFigures {
  /** `Kind/namespace/name` of the source. */
  readonly source: string
}

/**
 * A dispatcher's schedule watermark as its heartbeat carries it (`MemberRecord.watermark`), true of its contract
 * as read through `contractOffset`: every tick at or before `through` of every schedule it runs has been handled
 * (delivered, dead-lettered or dropped, or skipped by the late policy), except the schedules in `exceptions`,
 * handled only through their own time. A schedule it gave up is in `released` (for RELEASE_HOLD_MS), one it was
 * given and has not started in `pending`; a schedule in none of them runs here — if this dispatcher has it at
 * all, which only its contract says. Times are RFC 3339 UTC with milliseconds.
 */
export interface ScheduleWatermark {
  /** Absent before it first fired. */
  readonly through?: string
  readonly exceptions?: Readonly<Record<string, string>>
  /** Schedules it gave up: per schedule its latest releases, newest first, one per holding (see Release). */
  readonly released?: Readonly<Record<string, readonly Release[]>>
  /** Schedules in its contract not started yet: it waits for their previous owner. */
  readonly pending?: readonly string[]
  /** The offset of its contracts partition applied: every contract record up to it is reflected here. */
  readonly contractOffset: string
  /**
   * Set when `released` or `pending` were cut short (more than MAX_NAMED each): a schedule not named
   * may then be one of them, so this heartbeat does not say that a schedule it does not name runs here.
   */
  readonly partial?: true
}

/**
 * A schedule a dispatcher gave up: the holding that ended (`heldSince`, the contract offset that had given it the
 * schedule) and how far that holding handled it (`through`; null for a holding it never started). A holding that
 * ended with ticks in flight names them: `owed`, ticks at or before `through` it still delivers (its next owner
 * fires them only if it stops first), and `orphaned`, ticks it gave up without an answer (fenced or closing: its
 * next owner fires them).
 */
export interface Release {
  readonly through: string | null
  readonly heldSince: string
  readonly owed?: readonly string[]
  readonly orphaned?: readonly string[]
}

/**
 * `shoal.delivery-errors`, key `<sourceKey>`: the last delivery error a dispatcher saw for a source (a sink's error
 * status, a network error, a record dead-lettered or dropped). Written at most every few seconds per source.
 */
export interface DeliveryErrorRecord {
  readonly source: string
  readonly dispatcher: string
  /** When it happened, ISO-8601 (the dispatcher's clock). */
  readonly time: string
  readonly message: string
}

/** `dispatcher-7` → 7; anything else has no ordinal (sorted last). */
export function ordinalOf(dispatcherId: string): number {
  const match = /-(\d+)$/.exec(dispatcherId)
  return match ? Number(match[1]) : Number.MAX_SAFE_INTEGER
}

export function contractKey(dispatcher: string, source: string): string {
  return `${dispatcher}/${source}`
}
