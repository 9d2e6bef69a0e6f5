// One abort listener per caller signal, fanned out to every delivery waiting on it. A dispatcher hands the same
// shutdown signal to thousands of in-flight deliveries; one EventTarget listener each would cost more memory
// and trip Node's listener-leak warning.

/** An object told when a signal aborts: it is its own subscription, with no closure per subscriber. */
export interface AbortSubscriber {
  signalAborted(): void
}

type Subscriber = AbortSubscriber | (() => void)

const subscribers = new WeakMap<AbortSignal, Set<Subscriber>>()

/** Tells `subscriber` once when `signal` aborts (never when it already has: check `signal.aborted` first). */
export function subscribe(signal: AbortSignal, subscriber: Subscriber): void {
  let set = subscribers.get(signal)
  if (set === undefined) {
    const members = new Set<Subscriber>()
    set = members
    subscribers.set(signal, members)
    signal.addEventListener(
      'abort',
      () => {
        // Still registered while they run: one that unsubscribes another (a slot handed over) is heard.
        for (const member of members) {
          if (typeof member === 'function') member()
          else member.signalAborted()
        }
        subscribers.delete(signal)
        members.clear()
      },
      { once: true }
    )
  }
  set.add(subscriber)
}

/** Forgets `subscriber`. */
export function unsubscribe(signal: AbortSignal, subscriber: Subscriber): void {
  subscribers.get(signal)?.delete(subscriber)
}

/** Calls `callback` once when `signal` aborts; returns the function that unsubscribes it. */
export function onAbort(signal: AbortSignal, callback: () => void): () => void {
  subscribe(signal, callback)
  return () => unsubscribe(signal, callback)
}

/** Resolves true after `ms`, or false as soon as `signal` aborts (at once when it already has). */
export function pause(ms: number, signal?: AbortSignal): Promise<boolean> {
  if (signal?.aborted === true) return Promise.resolve(false)
  return new Promise(resolve => {
    let unsubscribe = (): void => {}
    const timer = setTimeout(() => {
      unsubscribe()
      resolve(true)
    }, ms)
    if (signal !== undefined) {
      unsubscribe = onAbort(signal, () => {
        clearTimeout(timer)
        resolve(false)
      })
    }
  })
}
