// Waiting in tests: on a condition, with a deadline, never on a fixed sleep.

/**
 * Polls `check` every `pollMs` until it returns something other than `undefined` or `false`, and resolves with
 * that. Fails after `timeoutMs` with an error naming `what` was awaited (and the last error `check` threw), rather
 * than hanging until the test runner's timeout. A function for `what` is called then, so it can tell the state at the
 * deadline rather than at the start.
 */
export async function eventually<T>(
  check: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs: number,
  what: string | (() => string),
  pollMs = 100
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let last: string | undefined
  for (;;) {
    try {
      const value = await check()
      if (value !== undefined && value !== false) return value
    } catch (error) {
      last = error instanceof Error ? error.message : String(error)
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${typeof what === 'function' ? what() : what}${last === undefined ? '' : `: ${last}`}`
      )
    }
    await new Promise(resolve => setTimeout(resolve, pollMs))
  }
}
