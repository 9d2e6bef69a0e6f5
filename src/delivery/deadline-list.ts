import { MAX_TIMER_MS } from './backoff.ts'

// Deadlines that all lie the same time after they were set — every attempt of a source under its timeout —
// expire in the order they were added, so one linked list and one timer per timeout value do what a timer per
// attempt does, without a Timeout object (and its arguments) for each of thousands of requests held at once.

/** A node of a DeadlineList: the list links it in place, and calls `expire` at its deadline. */
export interface Deadline {
  deadlineAt: number
  prevDeadline: Deadline | undefined
  nextDeadline: Deadline | undefined
  expire(): void
}

/** Deadlines `ms` after each `add`, expired in order by one timer (armed only while the list is not empty). */
export class DeadlineList {
  readonly #ms: number
  #head: Deadline | undefined
  #tail: Deadline | undefined
  #timer: NodeJS.Timeout | undefined

  constructor(ms: number) {
    this.#ms = Math.min(ms, MAX_TIMER_MS)
  }

  /** Expires `node` `ms` from now, unless it is removed first. */
  add(node: Deadline): void {
    node.deadlineAt = performance.now() + this.#ms
    node.prevDeadline = this.#tail
    node.nextDeadline = undefined
    if (this.#tail === undefined) this.#head = node
    else this.#tail.nextDeadline = node
    this.#tail = node
    this.#timer ??= setTimeout(() => this.#expire(), this.#ms)
  }

  /** Takes `node` off the list (a no-op when it is not on it). */
  remove(node: Deadline): void {
    if (node.prevDeadline === undefined && this.#head !== node) return
    if (node.prevDeadline === undefined) this.#head = node.nextDeadline
    else node.prevDeadline.nextDeadline = node.nextDeadline
    if (node.nextDeadline === undefined) this.#tail = node.prevDeadline
    else node.nextDeadline.prevDeadline = node.prevDeadline
    node.prevDeadline = undefined
    node.nextDeadline = undefined
    if (this.#head === undefined && this.#timer !== undefined) {
      clearTimeout(this.#timer)
      this.#timer = undefined
    }
  }

  #expire(): void {
    this.#timer = undefined
    const now = performance.now()
    for (let head = this.#head; head !== undefined && head.deadlineAt <= now; head = this.#head) {
      this.remove(head)
      head.expire()
    }
    // Timers fire on whole milliseconds: the next deadline may be a fraction of one away.
    if (this.#head !== undefined) {
      this.#timer ??= setTimeout(() => this.#expire(), Math.max(1, Math.ceil(this.#head.deadlineAt - now)))
    }
  }
}
