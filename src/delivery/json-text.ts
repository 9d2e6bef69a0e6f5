// Whether bytes are one JSON text (RFC 8259 §2), checked on the bytes: no decoding, no value built. A batch
// splices an event's JSON data into its body as it is, and needs only to know that it parses — JSON.parse
// would decode the bytes and build the whole value to say so. Iterative: any depth, as JSON.parse takes.

const OBJECT = 1
const ARRAY = 2

/**
 * Whether `bytes` are one JSON text with optional whitespace around it that every conforming parser reads the
 * same: what `JSON.parse` accepts (bytes past ASCII are allowed only inside strings, as there; callers check
 * UTF-8 themselves), less what I-JSON (RFC 7493 §2.1, §2.2) rules out and strict parsers (Go's encoding/json,
 * Jackson, serde_json) refuse: an escaped surrogate that is not half of a pair (`"\ud800"`), and a number past
 * what a double holds (`1e400`). Duplicate member names, which I-JSON also rules out, are not looked for.
 */
export function isJsonText(bytes: Uint8Array): boolean {
  const open: number[] = []
  let i = skipSpace(bytes, 0)
  for (;;) {
    const depth = open.length
    i = value(bytes, i, open)
    // A container opened: its first value comes next.
    if (i >= 0 && open.length === depth) i = afterValue(bytes, i, open)
    if (i === END) return true
    if (i < 0) return false
  }
}

const END = -2

// After a value at `i`: closes the containers it ends, then gives the index of the next member's or element's
// value, END at the end of a valid text, or -1.
function afterValue(bytes: Uint8Array, i: number, open: number[]): number {
  for (;;) {
    i = skipSpace(bytes, i)
    const container = open[open.length - 1]
    if (container === undefined) return i === bytes.length ? END : -1
    const byte = bytes[i]
    if (byte === 0x2c) {
      const next = skipSpace(bytes, i + 1)
      return container === OBJECT ? memberName(bytes, next) : next
    }
    if (byte !== (container === OBJECT ? 0x7d : 0x5d)) return -1
    open.pop()
    i++
  }
}

// The value at `i`: the index past a scalar or an empty container, or, for a container that is not empty, the
// index of its first value (its kind pushed on `open`); -1 when there is no valid value there.
function value(bytes: Uint8Array, i: number, open: number[]): number {
  switch (bytes[i]) {
    case 0x7b: {
      const next = skipSpace(bytes, i + 1)
      if (bytes[next] === 0x7d) return next + 1
      open.push(OBJECT)
      return memberName(bytes, next)
    }
    case 0x5b: {
      const next = skipSpace(bytes, i + 1)
      if (bytes[next] === 0x5d) return next + 1
      open.push(ARRAY)
      return next
    }
    case 0x22:
      return string(bytes, i)
    case 0x74:
      return literal(bytes, i, TRUE)
    case 0x66:
      return literal(bytes, i, FALSE)
    case 0x6e:
      return literal(bytes, i, NULL)
    default:
      return number(bytes, i)
  }
}

const TRUE = Buffer.from('true')
const FALSE = Buffer.from('false')
const NULL = Buffer.from('null')

function literal(bytes: Uint8Array, i: number, word: Buffer): number {
  for (let k = 1; k < word.length; k++) if (bytes[i + k] !== word[k]) return -1
  return i + word.length
}

function skipSpace(bytes: Uint8Array, i: number): number {
  while (i < bytes.length) {
    const byte = bytes[i]
    if (byte !== 0x20 && byte !== 0x0a && byte !== 0x0d && byte !== 0x09) break
    i++
  }
  return i
}

// `"name"`, `:` and whitespace at `i`: the index of the member's value, or -1.
function memberName(bytes: Uint8Array, i: number): number {
  if (bytes[i] !== 0x22) return -1
  const end = string(bytes, i)
  if (end < 0) return -1
  i = skipSpace(bytes, end)
  return bytes[i] === 0x3a ? skipSpace(bytes, i + 1) : -1
}

const HEX = new Uint8Array(256)
for (const c of '0123456789abcdefABCDEF') HEX[c.charCodeAt(0)] = 1
const ESCAPED = new Uint8Array(256)
for (const c of '"\\/bfnrt') ESCAPED[c.charCodeAt(0)] = 1

// The string whose opening quote is at `i`: the index past its closing quote, or -1 (a control character, a bad
// escape, no end).
function string(bytes: Uint8Array, i: number): number {
  for (i++; i < bytes.length; i++) {
    const byte = bytes[i] as number
    if (byte === 0x22) return i + 1
    if (byte < 0x20) return -1
    if (byte !== 0x5c) continue
    const escape = bytes[++i] as number
    if (escape === 0x75) {
      const unit = hex4(bytes, i + 1)
      if (unit < 0) return -1
      i += 4
      // A surrogate must be the high half of a pair whose low half is escaped right after it.
      if (unit >= 0xdc00 && unit <= 0xdfff) return -1
      if (unit >= 0xd800 && unit <= 0xdbff) {
        if (bytes[i + 1] !== 0x5c || bytes[i + 2] !== 0x75) return -1
        const low = hex4(bytes, i + 3)
        if (low < 0xdc00 || low > 0xdfff) return -1
        i += 6
      }
    } else if (ESCAPED[escape] !== 1) {
      return -1
    }
  }
  return -1
}

// The four hex digits at `i` as a UTF-16 code unit, or -1.
function hex4(bytes: Uint8Array, i: number): number {
  let unit = 0
  for (let k = 0; k < 4; k++) {
    const byte = bytes[i + k] as number
    if (HEX[byte] !== 1) return -1
    unit = unit * 16 + (byte <= 0x39 ? byte - 0x30 : (byte | 0x20) - 0x57)
  }
  return unit
}

// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?` at `i`, within a double's range: the index past it, or
// -1. Only a number with an exponent or over 300 digits can pass the range, and only those are converted.
function number(bytes: Uint8Array, i: number): number {
  const start = i
  if (bytes[i] === 0x2d) i++
  if (bytes[i] === 0x30) i++
  else if (isDigit(bytes[i])) i = digits(bytes, i)
  else return -1
  if (bytes[i] === 0x2e) {
    if (!isDigit(bytes[i + 1])) return -1
    i = digits(bytes, i + 1)
  }
  let exponent = false
  if (bytes[i] === 0x65 || bytes[i] === 0x45) {
    exponent = true
    i++
    if (bytes[i] === 0x2b || bytes[i] === 0x2d) i++
    if (!isDigit(bytes[i])) return -1
    i = digits(bytes, i)
  }
  if (
    (exponent || i - start > 300) &&
    !Number.isFinite(Number(Buffer.from(bytes.subarray(start, i)).toString('latin1')))
  )
    return -1
  return i
}

function isDigit(byte: number | undefined): boolean {
  return byte !== undefined && byte >= 0x30 && byte <= 0x39
}

function digits(bytes: Uint8Array, i: number): number {
  while (isDigit(bytes[i])) i++
  return i
}
