/**
 * Label selectors, in kubectl's syntax: `a=b`, `a==b`, `a!=b`, `a`, `!a`, `a in (x,y)`, `a notin (x)`,
 * comma-separated and all required. Parsed on the client so a typo is a usage error naming the selector,
 * not a round trip.
 */
export type Requirement =
  | { readonly op: 'equals' | 'notEquals'; readonly key: string; readonly value: string }
  | { readonly op: 'in' | 'notIn'; readonly key: string; readonly values: readonly string[] }
  | { readonly op: 'exists' | 'notExists'; readonly key: string }

export type SelectorParse =
  | { readonly ok: true; readonly requirements: readonly Requirement[] }
  | { readonly ok: false; readonly message: string }

const namePart = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/
const prefixPart = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/
const labelValue = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/

/** A label key: an optional DNS-subdomain prefix and `/`, then a name of at most 63 characters. */
export function isLabelKey(key: string): boolean {
  const slash = key.indexOf('/')
  if (slash === -1) return namePart.test(key)
  const prefix = key.slice(0, slash)
  return prefix.length <= 253 && prefixPart.test(prefix) && namePart.test(key.slice(slash + 1))
}

export function isLabelValue(value: string): boolean {
  return value.length <= 63 && labelValue.test(value)
}

export function parseSelector(text: string): SelectorParse {
  const requirements: Requirement[] = []
  for (const term of splitTerms(text)) {
    const parsed = parseRequirement(term.trim())
    if (typeof parsed === 'string')
      return { ok: false, message: `unable to parse requirement "${term.trim()}": ${parsed}` }
    requirements.push(parsed)
  }
  return { ok: true, requirements }
}

/** Splits on commas that are not inside `( … )`. */
function splitTerms(text: string): string[] {
  if (text.trim() === '') return []
  const terms: string[] = []
  let depth = 0
  let current = ''
  for (const char of text) {
    if (char === '(') depth++
    if (char === ')') depth--
    if (char === ',' && depth === 0) {
      terms.push(current)
      current = ''
    } else {
      current += char
    }
  }
  terms.push(current)
  return terms
}

function parseRequirement(term: string): Requirement | string {
  if (term === '') return 'empty requirement'
  const setBased = /^(\S+)\s+(in|notin)\s*\((.*)\)$/.exec(term)
  if (setBased !== null) {
    const [, key = '', op, list = ''] = setBased
    const values = list.split(',').map(v => v.trim())
    if (!isLabelKey(key)) return invalidKey(key)
    const badValue = values.find(v => !isLabelValue(v))
    if (badValue !== undefined) return invalidValue(badValue)
    return { op: op === 'in' ? 'in' : 'notIn', key, values }
  }
  const equality = /^([^=!\s]+)\s*(==|=|!=)\s*(.*)$/.exec(term)
  if (equality !== null) {
    const [, key = '', op, value = ''] = equality
    if (!isLabelKey(key)) return invalidKey(key)
    if (!isLabelValue(value)) return invalidValue(value)
    return { op: op === '!=' ? 'notEquals' : 'equals', key, value }
  }
  if (term.startsWith('!')) {
    const key = term.slice(1).trim()
    return isLabelKey(key) ? { op: 'notExists', key } : invalidKey(key)
  }
  return isLabelKey(term) ? { op: 'exists', key: term } : invalidKey(term)
}

function invalidKey(key: string): string {
  return `invalid label key "${key}": a name of at most 63 characters (A-Z, a-z, 0-9, '-', '_', '.'), optionally prefixed by a DNS subdomain and '/'`
}

function invalidValue(value: string): string {
  return `invalid label value "${value}": at most 63 characters (A-Z, a-z, 0-9, '-', '_', '.'), beginning and ending with an alphanumeric`
}

/** Whether `labels` satisfy every requirement (Kubernetes semantics: `a!=b` and `a notin (…)` hold when `a` is absent). */
export function matchesSelector(
  requirements: readonly Requirement[],
  labels: Readonly<Record<string, string>> | undefined
): boolean {
  const has = (key: string): boolean => labels !== undefined && Object.hasOwn(labels, key)
  const get = (key: string): string | undefined => (has(key) ? labels?.[key] : undefined)
  return requirements.every(r => {
    switch (r.op) {
      case 'equals':
        return get(r.key) === r.value
      case 'notEquals':
        return get(r.key) !== r.value
      case 'in':
        return has(r.key) && r.values.includes(get(r.key) ?? '')
      case 'notIn':
        return !has(r.key) || !r.values.includes(get(r.key) ?? '')
      case 'exists':
        return has(r.key)
      case 'notExists':
        return !has(r.key)
    }
  })
}

/** The canonical text of one requirement, as it goes into `?labelSelector=`. */
export function formatRequirement(r: Requirement): string {
  switch (r.op) {
    case 'equals':
      return `${r.key}=${r.value}`
    case 'notEquals':
      return `${r.key}!=${r.value}`
    case 'in':
      return `${r.key} in (${r.values.join(',')})`
    case 'notIn':
      return `${r.key} notin (${r.values.join(',')})`
    case 'exists':
      return r.key
    case 'notExists':
      return `!${r.key}`
  }
}

/** The `?labelSelector=` text of parsed requirements; the server understands the whole grammar. */
export function serverSelector(requirements: readonly Requirement[]): string {
  return requirements.map(formatRequirement).join(',')
}
