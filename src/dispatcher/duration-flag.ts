const UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1_000, m: 60_000 }

/** Milliseconds of a flag's duration: `500ms`, `10s`, `2.5s`, `1m`; undefined when it is not one. */
export function parseDurationFlag(text: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m)$/.exec(text.trim())
  if (match === null) return undefined
  const ms = Math.round(Number(match[1]) * (UNITS[match[2] as string] as number))
  return Number.isSafeInteger(ms) ? ms : undefined
}
