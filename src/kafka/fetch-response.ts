import type { fetchV17 } from '@platformatic/kafka'

/** The fetch response a failed fetch still carries (partition-level errors fail the whole call). */
export function fetchResponseOf(error: unknown): fetchV17.FetchResponse | undefined {
  const seen = new Set<unknown>()
  const visit = (e: unknown): fetchV17.FetchResponse | undefined => {
    if (typeof e !== 'object' || e === null || seen.has(e)) return undefined
    seen.add(e)
    const response = (e as { response?: unknown }).response
    if (
      typeof response === 'object' &&
      response !== null &&
      Array.isArray((response as { responses?: unknown }).responses)
    ) {
      return response as fetchV17.FetchResponse
    }
    for (const inner of (e as { errors?: unknown[] }).errors ?? []) {
      const found = visit(inner)
      if (found) return found
    }
    return undefined
  }
  return visit(error)
}
