/** One route: the methods it answers (`'any'`: every one), a path pattern, and what answers it. */
export interface Route<H> {
  readonly methods: readonly string[] | 'any'
  /** Segments split on `/`: a literal matches itself as sent, `:name` matches any segment (even an empty one). */
  readonly path: string
  readonly handler: H
}

/** What the router made of a request: a route with its decoded params, no route, or a path that does not decode. */
export type RouteMatch<H> =
  | { readonly kind: 'matched'; readonly handler: H; readonly params: Readonly<Record<string, string>> }
  | { readonly kind: 'unmatched' }
  | { readonly kind: 'malformed' }

/** Finds a request's route. Pure: the routes are values, tried in order, the first that matches wins. */
export type Router<H> = (method: string, path: string) => RouteMatch<H>

export function createRouter<H>(routes: ReadonlyArray<Route<H>>): Router<H> {
  const compiled = routes.map(route => ({ route, segments: segmentsOf(route.path) }))
  return (method, path) => {
    const segments = segmentsOf(path)
    for (const { route, segments: pattern } of compiled) {
      if (route.methods !== 'any' && !route.methods.includes(method)) continue
      const raw = paramsOf(pattern, segments)
      if (raw === undefined) continue
      const params = decodeAll(raw)
      return params === undefined ? { kind: 'malformed' } : { kind: 'matched', handler: route.handler, params }
    }
    // A path no route serves but whose encoding is broken is refused as malformed rather than unknown.
    return segments.every(decodes) ? { kind: 'unmatched' } : { kind: 'malformed' }
  }
}

function segmentsOf(path: string): string[] {
  return path.split('/').slice(1)
}

/** The still-encoded params of a path that fits the pattern, or undefined. */
function paramsOf(pattern: readonly string[], segments: readonly string[]): Record<string, string> | undefined {
  if (pattern.length !== segments.length) return undefined
  const params: Record<string, string> = {}
  for (const [i, part] of pattern.entries()) {
    const segment = segments[i]!
    if (part.startsWith(':')) params[part.slice(1)] = segment
    else if (part !== segment) return undefined
  }
  return params
}

/** The params percent-decoded, or undefined when one is broken (`%zz`). */
function decodeAll(raw: Readonly<Record<string, string>>): Record<string, string> | undefined {
  return Object.values(raw).every(decodes)
    ? Object.fromEntries(Object.entries(raw).map(([name, value]) => [name, decodeURIComponent(value)]))
    : undefined
}

function decodes(segment: string): boolean {
  try {
    decodeURIComponent(segment)
    return true
  } catch {
    return false
  }
}
