export { withTimeout } from '../util/index.ts'

/** A loop's "something changed": `wait` resolves at the next `notify` or after `ms`, whichever is first. */
export class Wake {
  #waiters: Array<() => void> = []

  notify(): void {
    const waiters = this.#waiters
    this.#waiters = []
    for (const resolve of waiters) resolve()
  }

  wait(ms: number): Promise<void> {
    return new Promise(resolve => {
      const done = (): void => {
        clearTimeout(timer)
        resolve()
      }
      const timer = setTimeout(() => {
        this.#waiters = this.#waiters.filter(w => w !== done)
        resolve()
      }, ms)
      this.#waiters.push(done)
    })
  }
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve()
  return new Promise(resolve => {
    const done = (): void => {
      clearTimeout(timer)
      signal.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    signal.addEventListener('abort', done, { once: true })
  })
}
