import type { ContractRecord, MemberRecord } from '../store/index.ts'
import type { PlaneServices } from './plane-services.ts'
import type { Log } from '../log/index.ts'

/** A placement of the plane's kind that went, with the contract offset that had given it. */
export interface EndedPlacement {
  readonly source: string
  readonly heldSince: string
}

/** The dispatcher's contract as one plane sees it: its own kind's placements only. */
export interface PlaneContract {
  /** Source key (`Kind/namespace/name`) → this dispatcher's placement of it. */
  readonly contract: ReadonlyMap<string, ContractRecord>
  /** Whether the contract may run now: false while the dispatcher is fenced or stopping. */
  readonly running: boolean
  /**
   * How long deliveries on the wire of what stops now may go on before they are cut; absent, the plane's own
   * drain. A fenced dispatcher's (see `fencedDrainOf`) ends before the controllers may declare it dead.
   */
  readonly drainMs?: number
  /** The highest offset of the dispatcher's contracts partition applied. */
  readonly contractOffset: bigint
  /** Placements that went since the last apply, also those given and taken between two applies. */
  readonly ended: readonly EndedPlacement[]
}

/** What one source of a plane is doing, for the dispatcher's metrics. */
export interface PlaneActivity {
  readonly source: string
  readonly inFlight: number
  readonly partitions?: ReadonlyArray<{ readonly topic: string; readonly partition: number; readonly lag: number }>
}

/** What a dispatcher hands each plane it runs: who it is, and the services it owns and shares. */
export interface PlaneHost {
  readonly dispatcherId: string
  /** This process's incarnation: its own heartbeats are not a previous owner's. */
  readonly incarnation: number
  readonly livenessTimeoutMs: number
  /** The Kafka that holds Shoal's store. */
  readonly brokers: readonly string[]
  readonly prefix?: string
  readonly serviceUrlTemplate: string
  readonly services: PlaneServices
  readonly log: Log
  /** Asks for a heartbeat soon, between the regular ones: what the plane puts in it moved. */
  heartbeatSoon(): void
}

/** The data plane of one source kind on a dispatcher: runs the placements of its kind the contract names. */
export interface SourcePlane {
  /** The kind whose placements it runs (`KafkaSource`, `PingSource`): the first segment of their keys. */
  readonly kind: string
  /** Reads what it needs before the first apply (it subscribes to the shared resources reader when built). */
  start(): Promise<void>
  /** Runs what the contract says, or nothing while it is not running. Never throws. */
  apply(contract: PlaneContract): void
  /** Stops its sources, letting deliveries in flight drain; the shared services are closed after it. */
  close(): Promise<void>
  /** Its sources' activity, when it has some to show in the dispatcher's metrics. */
  activity?(): readonly PlaneActivity[]
  /** What it puts in every heartbeat (the PingSource schedules' watermark). */
  watermark?(): MemberRecord['watermark']
}
