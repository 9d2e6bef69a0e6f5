// Which sources get a `source` label of their own: the pure rule, tested without metrics or I/O.

/**
 * The at most `max` sources to label: highest score first (deliveries seen since the last ranking plus
 * records in flight now); on a tie, sources labelled already before others (so series do not flap), then by
 * key. Only keys in `scores` are candidates: a source absent from it loses its label.
 */
export function rankSources(
  scores: ReadonlyMap<string, number>,
  current: ReadonlySet<string>,
  max: number
): Set<string> {
  if (scores.size <= max) return new Set(scores.keys())
  const ranked = [...scores].sort(
    ([a, sa], [b, sb]) => sb - sa || Number(current.has(b)) - Number(current.has(a)) || (a < b ? -1 : a > b ? 1 : 0)
  )
  return new Set(ranked.slice(0, max).map(([key]) => key))
}
