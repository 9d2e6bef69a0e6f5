// One abort listener per caller signal, fanned out to every delivery waiting on it. A dispatcher hands the same
// shutdown signal to thousands of in-flight deliveries; one EventTarget listener each would cost more memory
// and trip Node's listener-leak warning.

const subscribers = new WeakMap<AbortSignal, Set<() => void>>()

/** Calls `callback` once when `signal` aborts; returns the function that unsubscribes it. */
export function onAbort(signal: AbortSignal, callback: () => void): () => void {
  let set = subscribers.get(signal)
  if (set === undefined) {
    const callbacks = new Set<() => void>()
    set = callbacks
    subscribers.set(signal, callbacks)
    signal.addEventListener(
      'abort',
      () => {
        subscribers.delete(signal)
        for (const cb of callbacks) cb()
        callbacks.clear()
      },
      { once: true }
    )
  }
  set.add(callback)
  const registered = set
  return () => {
    registered.delete(callback)
  }
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
