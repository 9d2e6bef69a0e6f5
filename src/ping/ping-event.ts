import { createHash } from 'node:crypto'
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
  const hash = createHash('sha1').update(`${uid}/${tickMs}`).digest()
  hash[6] = ((hash[6] as number) & 0x0f) | 0x50
  hash[8] = ((hash[8] as number) & 0x3f) | 0x80
  const hex = hash.subarray(0, 16).toString('hex')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

/**
 * Builds the events of one source version: what is the same for every tick is computed once (the source
 * attribute, the data bytes, the overrides), a tick adds its id and ce-time.
 */
export class PingEventBuilder {
  readonly #uid: string
  readonly #source: string
  readonly #contentType: string | undefined
  readonly #data: Buffer
  readonly #extensions: Readonly<Record<string, string>>
  readonly #lateExtensions: Readonly<Record<string, string>>

  constructor(source: PingEventSource) {
    this.#uid = source.uid
    this.#source = pingEventSource(source.namespace, source.name)
    this.#data =
      source.dataBase64 !== undefined
        ? Buffer.from(source.dataBase64.replace(/[\r\n]/g, ''), 'base64')
        : Buffer.from(source.data ?? '', 'utf8')
    // Knative sets the content type with the data; an event without data has neither.
    this.#contentType = this.#data.length > 0 ? source.contentType : undefined
    // Most sources have no overrides: they share two frozen objects (100,000 schedules, 200,000 fewer objects).
    const overrides = source.extensions === undefined || Object.keys(source.extensions).length === 0
    this.#extensions = overrides ? NO_EXTENSIONS : Object.freeze({ ...source.extensions })
    this.#lateExtensions = overrides ? LATE_ONLY : Object.freeze({ ...source.extensions, [LATE_EXTENSION]: 'true' })
  }

  /** The event of the tick at `tickMs`; `late` marks a tick fired by catch-up. */
  event(tickMs: number, late: boolean): CloudEvent {
    return {
      attributes: {
        specversion: '1.0',
        id: tickEventId(this.#uid, tickMs),
        source: this.#source,
        type: PING_EVENT_TYPE,
        ...(this.#contentType === undefined ? {} : { datacontenttype: this.#contentType }),
        time: new Date(tickMs).toISOString()
      },
      extensions: late ? this.#lateExtensions : this.#extensions,
      data: this.#data
    }
  }
}
