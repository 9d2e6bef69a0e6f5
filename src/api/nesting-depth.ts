/**
 * An upper bound, in one linear pass, on how deeply a YAML or JSON text nests: flow collections (`[`, `{`)
 * open and close, and block sequences written compactly on one line (`- - - x`) add their dashes. Quotes are
 * not tracked, so brackets inside strings count too: the bound errs towards refusing, never towards parsing.
 * It exists because the YAML parser needs seconds to find a 1 MiB `[[[[…` too deep, blocking the event loop.
 */
export function nestingDepthBound(text: string): number {
  let flow = 0
  let deepest = 0
  let lineStart = true
  let dashes = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x5b || c === 0x7b) {
      flow++
    } else if (c === 0x5d || c === 0x7d) {
      if (flow > 0) flow--
    } else if (c === 0x0a) {
      lineStart = true
      dashes = 0
      continue
    } else if (lineStart && (c === 0x2d || c === 0x3f) && isBlank(text.charCodeAt(i + 1))) {
      dashes++
    } else if (!isBlank(c)) {
      lineStart = false
    }
    const depth = flow + dashes
    if (depth > deepest) deepest = depth
  }
  return deepest
}

function isBlank(c: number): boolean {
  return c === 0x20 || c === 0x09
}
