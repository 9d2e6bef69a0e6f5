/** `promise`, or a rejection once `ms` have passed without it settling (`what` names it in the error). */
export function withTimeout<T>(promise: Promise<T>, ms: number, what = 'timed out'): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([
    promise,
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: no answer after ${ms} ms`)), ms)
    })
  ]).finally(() => clearTimeout(timer))
}
