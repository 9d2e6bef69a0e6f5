// The lab's sink as users run one: the CloudEvents Python SDK over the standard library's ThreadingHTTPServer, listen
// backlog 5 (test/sinks/python_sink.py), on the sink host's address. One KafkaSource delivers to it. It counts that
// source's events as CountingSink does — by the record's value, the drill's id, and by the sender's address — and
// also by partition and offset, to be checked against the topic's end offsets as Kafka's own tool reads them.
import assert from 'node:assert/strict'
import { acceptedIds, noteAccepted } from '../faults/harness.ts'
import type { AnswerLog } from '../faults/harness.ts'
import { topicEndOffsets } from '../helpers/kafka-tools.ts'
import { eventually } from '../helpers/wait.ts'
import { startPythonSink } from '../sinks/python-sink.ts'
import type { PythonSink, PythonSinkLine } from '../sinks/python-sink.ts'

/** The drills' source to the user sink: key-ordered, the order Knative's KafkaSource users ask for most. */
export const USER_SOURCE = 'python-key'

/** What the user sink's source delivered of the topic: every offset below its end, or those missing. */
export interface OffsetCount {
  readonly records: number
  readonly missing: readonly string[]
  readonly note: string
}

/** `partition:P/offset:O`, the id of an event made from a plain record. */
const RECORD_ID = /^partition:(\d+)\/offset:(\d+)$/

export class UserSink implements AnswerLog {
  /** `source|id` → 2xx answers (the id is the record's value). */
  readonly accepted = new Map<string, number>()
  /** Never filled: this sink accepts every CloudEvent (countFigures reads it). */
  readonly refused: ReadonlySet<string> = new Set<string>()
  /** Sender address → when each event from it was answered (ms). */
  readonly acceptedFrom = new Map<string, number[]>()
  /** `source|partition` → when each event of that partition was answered, and to which sender address. */
  readonly partitionAnswers = new Map<string, Array<readonly [at: number, from: string]>>()
  /** Partition → the offsets answered. */
  readonly offsets = new Map<number, Set<number>>()
  /** Events answered that were not made from a plain record (no `partition:P/offset:O` id): must stay empty. */
  readonly strays: string[] = []
  readonly source: string
  #sink: PythonSink | undefined

  constructor(source: string) {
    this.source = source
  }

  /** Starts the Python sink on `host`, any free port. */
  async start(host: string): Promise<this> {
    this.#sink = await startPythonSink(['--host', host, '--print-data'], line => this.#answered(line))
    return this
  }

  get url(): string {
    if (this.#sink === undefined) throw new Error('the user sink is not started')
    return this.#sink.url
  }

  /** Unique ids accepted for `source`. */
  ids(source: string): Set<string> {
    return acceptedIds(this.accepted, source)
  }

  /**
   * Every offset below each partition's end (`ends`, from Kafka's GetOffsetShell) that the sink never answered, as
   * `P/O`. A topic written without transactions holds a record at every offset, so each must have arrived.
   */
  missingOffsets(ends: ReadonlyMap<number, number>): string[] {
    const missing: string[] = []
    for (const [partition, end] of ends) {
      const answered = this.offsets.get(partition) ?? new Set<number>()
      for (let offset = 0; offset < end; offset++) if (!answered.has(offset)) missing.push(`${partition}/${offset}`)
    }
    return missing
  }

  /**
   * Reads the topic's ends as Kafka's GetOffsetShell does, from `brokers`; waits (a minute at most) until every offset
   * below them was answered — a record written twice by a retried send sits at an offset of its own, and may still be
   * on its way when every id has arrived — then counts.
   */
  async settleAgainst(brokers: ReadonlyArray<{ readonly address: string }>, topic: string): Promise<OffsetCount> {
    const ends = await topicEndOffsets(brokers.map(b => b.address).join(','), topic)
    await eventually(
      async () => (this.missingOffsets(ends).length === 0 ? true : undefined),
      60_000,
      'every offset'
    ).catch(() => undefined)
    const missing = this.missingOffsets(ends)
    const records = [...ends.values()].reduce((a, b) => a + b, 0)
    const answers = [...this.accepted.values()].reduce((a, b) => a + b, 0)
    const note =
      `topic records ${records} (GetOffsetShell), missing ${missing.length}, answers ${answers}, ` +
      `not from a record ${this.strays.length}`
    return { records, missing, note }
  }

  /** Fails unless every record of the topic was answered and nothing else arrived. */
  assertEveryOffset(count: OffsetCount): void {
    assert.deepEqual(count.missing.slice(0, 20), [], `${this.source}: offsets never delivered (${count.note})`)
    assert.deepEqual(this.strays.slice(0, 20), [], `${this.source}: events not made from a record`)
  }

  async close(): Promise<void> {
    await this.#sink?.stop()
  }

  #answered(line: PythonSinkLine): void {
    if (line.kind !== 'answered') return
    const record = RECORD_ID.exec(line.id)
    if (record === null || line.data === undefined) {
      this.strays.push(line.id)
      return
    }
    const [partition, offset] = [Number(record[1]), Number(record[2])]
    const from = (line.peer ?? '').replace(/^::ffff:/, '')
    noteAccepted(this, this.source, [`${this.source}|${line.data}`], [partition], from)
    let offsets = this.offsets.get(partition)
    if (offsets === undefined) this.offsets.set(partition, (offsets = new Set()))
    offsets.add(offset)
  }
}
