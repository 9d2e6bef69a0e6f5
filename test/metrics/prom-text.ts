// A strict reader of the Prometheus text exposition format (0.0.4), enough to check what /metrics serves:
// every sample's family has HELP and TYPE first, names and labels are well-formed, values are numbers.

export interface Sample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

export interface Family {
  readonly name: string
  readonly type: 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped'
  readonly help: string
  readonly samples: Sample[]
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/
const SUFFIXES: Readonly<Record<Family['type'], readonly string[]>> = {
  counter: [''],
  gauge: [''],
  untyped: [''],
  histogram: ['_bucket', '_sum', '_count'],
  summary: ['', '_sum', '_count']
}

/** Parses a whole exposition; throws on the first malformed line, naming it. */
export function parseExposition(text: string): Map<string, Family> {
  const families = new Map<string, Family>()
  const help = new Map<string, string>()
  for (const [index, line] of text.split('\n').entries()) {
    const where = `line ${index + 1}: ${line}`
    if (line === '') continue
    if (line.startsWith('# HELP ')) {
      const [, name, text = ''] = /^# HELP (\S+) ?(.*)$/.exec(line) ?? []
      if (name === undefined || !NAME.test(name)) throw new Error(`bad HELP, ${where}`)
      help.set(name, text)
      continue
    }
    if (line.startsWith('# TYPE ')) {
      const [, name, type] = /^# TYPE (\S+) (counter|gauge|histogram|summary|untyped)$/.exec(line) ?? []
      if (name === undefined || !NAME.test(name)) throw new Error(`bad TYPE, ${where}`)
      if (families.has(name)) throw new Error(`second TYPE for ${name}, ${where}`)
      families.set(name, { name, type: type as Family['type'], help: help.get(name) ?? '', samples: [] })
      continue
    }
    if (line.startsWith('#')) continue
    const sample = parseSample(line, where)
    const family = [...families.values()].find(f =>
      SUFFIXES[f.type].some(suffix => `${f.name}${suffix}` === sample.name)
    )
    if (family === undefined) throw new Error(`sample without a TYPE, ${where}`)
    if (!help.has(family.name)) throw new Error(`sample without a HELP, ${where}`)
    family.samples.push(sample)
  }
  return families
}

function parseSample(line: string, where: string): Sample {
  const nameEnd = line.search(/[{ ]/)
  if (nameEnd <= 0) throw new Error(`bad sample, ${where}`)
  const name = line.slice(0, nameEnd)
  if (!NAME.test(name)) throw new Error(`bad metric name, ${where}`)
  const labels: Record<string, string> = {}
  let i = nameEnd
  if (line[i] === '{') {
    i++
    while (line[i] !== '}') {
      const eq = line.indexOf('=', i)
      const label = line.slice(i, eq)
      if (eq < 0 || !LABEL.test(label) || line[eq + 1] !== '"') throw new Error(`bad label, ${where}`)
      let value = ''
      let j = eq + 2
      for (; j < line.length && line[j] !== '"'; j++) {
        if (line[j] === '\\') {
          const next = line[++j]
          value += next === 'n' ? '\n' : next === '\\' ? '\\' : next === '"' ? '"' : `\\${next}`
        } else value += line[j]
      }
      if (j >= line.length) throw new Error(`unterminated label value, ${where}`)
      if (label in labels) throw new Error(`label ${label} twice, ${where}`)
      labels[label] = value
      i = j + 1
      if (line[i] === ',') i++
      else if (line[i] !== '}') throw new Error(`bad label list, ${where}`)
    }
    i++
  }
  const [valueText, timestamp, ...rest] = line.slice(i).trim().split(' ')
  if (valueText === undefined || rest.length > 0 || (timestamp !== undefined && !/^-?\d+$/.test(timestamp))) {
    throw new Error(`bad value, ${where}`)
  }
  // As Prometheus reads them (Go's ParseFloat): NaN and Inf in any case (prom-client writes `Nan`).
  const special = valueText?.toLowerCase()
  const value =
    special === 'nan'
      ? NaN
      : special === '+inf' || special === 'inf'
        ? Infinity
        : special === '-inf'
          ? -Infinity
          : valueText === '' || !/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(valueText)
            ? undefined
            : Number(valueText)
  if (value === undefined) throw new Error(`bad value, ${where}`)
  return { name, labels, value }
}

/** The value of the one sample named `name` whose labels include `labels`; undefined when there is none. */
export function valueOf(
  families: ReadonlyMap<string, Family>,
  name: string,
  labels: Readonly<Record<string, string>> = {}
): number | undefined {
  const matching = [...families.values()]
    .flatMap(f => f.samples)
    .filter(s => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
  if (matching.length > 1) throw new Error(`${matching.length} samples of ${name} match ${JSON.stringify(labels)}`)
  return matching[0]?.value
}

/** Every sample named `name`. */
export function samplesOf(families: ReadonlyMap<string, Family>, name: string): Sample[] {
  return [...families.values()].flatMap(f => f.samples).filter(s => s.name === name)
}
