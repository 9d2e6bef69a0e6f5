import { hash } from 'node:crypto'
import type { CloudEvent } from '../delivery/index.ts'
import { LATE_EXTENSION } from './late-policy.ts'

/** Knative PingSource's event type. */
export const PING_EVENT_TYPE = 'dev.knative.sources.ping'

/** What of a PingSource its events are built from. */
export interface PingEventSource {
  readonly namespace: string
  readonly name: string
  /** metadata.uid: with the nominal tick, it makes the event id. */
  readonly uid: string
  readonly contentType?: string
  readonly data?: string
  readonly dataBase64?: string
  readonly extensions?: Readonly<Record<string, string>>
}

const NO_EXTENSIONS: Readonly<Record<string, string>> = Object.freeze({})
const LATE_ONLY: Readonly<Record<string, string>> = Object.freeze({ [LATE_EXTENSION]: 'true' })

/** Knative's source attribute: `/apis/v1/namespaces/NS/pingsources/NAME`. */
export function pingEventSource(namespace: string, name: string): string {
  return `/apis/v1/namespaces/${namespace}/pingsources/${name}`
}

/**
 * The event id of a source's tick: a name-based UUID (version 5 layout, SHA-1) of the uid and the nominal tick
 * in milliseconds. The same tick always has the same id — on a retry, on a failover resend, on any dispatcher
 * — so a sink can drop duplicates; a source deleted and created again (a new uid) gets new ids.
 */
export function tickEventId(uid: string, tickMs: number): string {
  // One-shot hash to hex (no Hash object, no Buffer); the version nibble becomes 5, the variant bits 10.
  const hex = hash('sha1', `${uid}/${tickMs}`, 'hex')
  const variant = VARIANT[Number.parseInt(hex.charAt(16), 16) & 0x3] as string
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`
}

// The variant nibble 10xx, by the low two bits of the hash's nibble there.
const VARIANT: readonly string[] = ['8', '9', 'a', 'b']

/**
 * Builds the events of one source version: what is the same for every tick is computed once (the source
 * attribute, the data bytes, the overrides), a tick adds its id and ce-time. It keeps nothing else of the source:
 * a dispatcher holds one per schedule.
 */
export class PingEventBuilder {
  readonly #uid: string
  readonly #source: string
  readonly #contentType: string | undefined
  // Plain data stays the source's string (its PingRecord holds it anyway) and becomes bytes per tick: a Buffer
  // per schedule costs more than the copy. dataBase64 is decoded once.
  readonly #data: Buffer | string
  readonly #extensions: Readonly<Record<string, string>>

  constructor(source: PingEventSource) {
    this.#uid = source.uid
    this.#source = flat(pingEventSource(source.namespace, source.name))
    const data =
      source.dataBase64 !== undefined
        ? Buffer.from(source.dataBase64.replace(/[\r\n]/g, ''), 'base64')
        : (source.data ?? '')
    this.#data = data.length === 0 ? NO_DATA : data
    // Knative sets the content type with the data; an event without data has neither.
    this.#contentType = this.#data.length > 0 ? source.contentType : undefined
    // Most sources have no overrides: they share frozen objects (100,000 schedules, 100,000 fewer objects).
    const overrides = source.extensions !== undefined && Object.keys(source.extensions).length > 0
    this.#extensions = overrides ? Object.freeze({ ...source.extensions }) : NO_EXTENSIONS
  }

  /** The event of the tick at `tickMs`; `late` marks a tick fired by catch-up. */
  event(tickMs: number, late: boolean): CloudEvent {
    const id = tickEventId(this.#uid, tickMs)
    const time = isoTime(tickMs)
    const contentType = this.#contentType
    return {
      attributes:
        contentType === undefined
          ? { specversion: '1.0', id, source: this.#source, type: PING_EVENT_TYPE, time }
          : { specversion: '1.0', id, source: this.#source, type: PING_EVENT_TYPE, datacontenttype: contentType, time },
      extensions: late ? this.#lateExtensions() : this.#extensions,
      data: typeof this.#data === 'string' ? Buffer.from(this.#data, 'utf8') : this.#data
    }
  }

  // Late ticks are rare (catch-up after a failover or a stall): their extensions are built when needed.
  #lateExtensions(): Readonly<Record<string, string>> {
    return this.#extensions === NO_EXTENSIONS ? LATE_ONLY : { ...this.#extensions, [LATE_EXTENSION]: 'true' }
  }
}

const NO_DATA = Buffer.alloc(0)

// A string built by concatenation is a tree of pieces in V8; kept for the life of a schedule, one flat copy is
// about half the memory. JSON.parse makes a flat string (and touches no memory outside the JS heap).
function flat(value: string): string {
  return JSON.parse(JSON.stringify(value)) as string
}

// A burst is one tick for many sources: they share its RFC 3339 string.
let lastIsoMs = Number.NaN
let lastIso = ''

function isoTime(ms: number): string {
  if (ms !== lastIsoMs) {
    lastIso = new Date(ms).toISOString()
    lastIsoMs = ms
  }
  return lastIso
}
