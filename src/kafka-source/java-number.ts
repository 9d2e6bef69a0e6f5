// Java's Float.toString and Double.toString (JDK 19 and later, the data plane runs 21): what Knative writes for a
// KafkaSource key declared `float`. JavaScript has no float32 rendering, and its double rendering differs in form
// (`1e+21` against `1.0E21`) and, for p = 1, in digits (`5e-324` against `4.9E-324`). Pure; exact BigInt arithmetic.

interface Binary {
  /** The value is m · 2^e. */
  readonly m: bigint
  readonly e: number
  /** The gap below is half the gap above (a power of two with a smaller normal exponent below it). */
  readonly boundary: boolean
}

interface Decimal {
  /** The value is n · 10^k. */
  readonly n: bigint
  readonly k: number
}

/** Java's `Float.toString` of the IEEE-754 binary32 value with these bits. */
export function javaFloatToString(bits: number): string {
  const exponent = (bits >>> 23) & 0xff
  const fraction = bits & 0x7fffff
  const sign = bits >>> 31 === 1 ? '-' : ''
  if (exponent === 0xff) return fraction === 0 ? `${sign}Infinity` : 'NaN'
  if (exponent === 0 && fraction === 0) return `${sign}0.0`
  const binary: Binary =
    exponent === 0
      ? { m: BigInt(fraction), e: -149, boundary: false }
      : { m: BigInt(fraction | 0x800000), e: exponent - 150, boundary: fraction === 0 && exponent > 1 }
  const value = Math.abs(new Float32Array(new Uint32Array([bits >>> 0]).buffer)[0] as number)
  return sign + format(shortest(value, binary))
}

/** Java's `Double.toString` of the IEEE-754 binary64 value with these bits. */
export function javaDoubleToString(bits: bigint): string {
  const exponent = Number((bits >> 52n) & 0x7ffn)
  const fraction = bits & 0xfffffffffffffn
  const sign = (bits >> 63n) & 1n ? '-' : ''
  if (exponent === 0x7ff) return fraction === 0n ? `${sign}Infinity` : 'NaN'
  if (exponent === 0 && fraction === 0n) return `${sign}0.0`
  const binary: Binary =
    exponent === 0
      ? { m: fraction, e: -1074, boundary: false }
      : { m: fraction | (1n << 52n), e: exponent - 1075, boundary: fraction === 0n && exponent > 1 }
  const value = Math.abs(new Float64Array(new BigUint64Array([bits & 0xffffffffffffffffn]).buffer)[0] as number)
  return sign + format(shortest(value, binary))
}

// Java's choice: R = the decimals that round to x; p = the shortest length in R; T = R's decimals of length p (of
// length 1 or 2 when p = 1); the one of T closest to x, of two the one with the even significand.
function shortest(value: number, x: Binary): Decimal {
  // Rounding interval, in units of 2^(e-2): x is 4m; ends included when m is even (round half to even).
  const center = x.m * 4n
  const lo = center - (x.boundary ? 1n : 2n)
  const hi = center + 2n
  const inclusive = x.m % 2n === 0n
  const inR = (d: Decimal): boolean => {
    const below = compare(d, lo, x.e - 2)
    const above = compare(d, hi, x.e - 2)
    return inclusive ? below >= 0 && above <= 0 : below > 0 && above < 0
  }
  for (let p = 1; p <= 17; p++) {
    const found = near(value, p).filter(inR)
    if (found.length === 0) continue
    const candidates = p === 1 ? [...found, ...near(value, 2).filter(inR)] : found
    return closest(candidates, center, x.e - 2)
  }
  // Unreachable: 17 digits always identify a double.
  return near(value, 17)[1] as Decimal
}

// The p-digit decimals around the value: the correctly rounded one and its two neighbours.
function near(value: number, p: number): Decimal[] {
  const [digits = '', exp = '0'] = value.toExponential(p - 1).split('e')
  const n = BigInt(digits.replace('.', ''))
  const k = Number(exp) - (p - 1)
  return [
    { n: n - 1n, k },
    { n, k },
    { n: n + 1n, k }
  ].filter(d => d.n > 0n)
}

function closest(candidates: readonly Decimal[], center: bigint, e: number): Decimal {
  let best: Decimal | undefined
  let bestDistance = 0n
  let bestScale = 0
  for (const d of candidates) {
    // |d − center·2^e| scaled by 10^(−k) when k < 0, to compare across candidates below.
    const distance = absDiff(d, center, e)
    if (best === undefined) {
      ;[best, bestDistance, bestScale] = [d, distance, d.k]
      continue
    }
    const order = compareScaled(distance, d.k, bestDistance, bestScale)
    if (order < 0 || (order === 0 && isEven(d) && !isEven(best))) {
      ;[best, bestDistance, bestScale] = [d, distance, d.k]
    }
  }
  return best as Decimal
}

// Sign of n·10^k − b·2^e.
function compare(d: Decimal, b: bigint, e: number): number {
  const [left, right] = integers(d, b, e)
  return left === right ? 0 : left > right ? 1 : -1
}

// |n·10^k − b·2^e| · 10^max(0,−k) · 2^max(0,−e): the 2^ factor is the same for every candidate of one value.
function absDiff(d: Decimal, b: bigint, e: number): bigint {
  const [left, right] = integers(d, b, e)
  return left > right ? left - right : right - left
}

function integers(d: Decimal, b: bigint, e: number): [bigint, bigint] {
  let left = d.n
  let right = b
  if (d.k >= 0) left *= 10n ** BigInt(d.k)
  else right *= 10n ** BigInt(-d.k)
  if (e >= 0) right *= 2n ** BigInt(e)
  else left *= 2n ** BigInt(-e)
  return [left, right]
}

// Compares a·10^(−ka) with b·10^(−kb) (each distance was scaled by 10^(−k) when k < 0).
function compareScaled(a: bigint, ka: number, b: bigint, kb: number): number {
  const sa = Math.max(0, -ka)
  const sb = Math.max(0, -kb)
  const left = a * 10n ** BigInt(sb)
  const right = b * 10n ** BigInt(sa)
  return left === right ? 0 : left > right ? 1 : -1
}

function isEven(d: Decimal): boolean {
  let n = d.n
  while (n % 10n === 0n) n /= 10n
  return n % 2n === 0n
}

// Java's layout: plain for 10^−3 ≤ v < 10^7 with at least one digit after the point, else d.dddE±x.
function format(d: Decimal): string {
  let n = d.n
  let i = d.k
  while (n % 10n === 0n) {
    n /= 10n
    i++
  }
  const s = n.toString()
  const len = s.length
  const e = len + i - 1
  if (e >= -3 && e < 0) return `0.${'0'.repeat(-e - 1)}${s}`
  if (e >= 0 && e < 7) {
    if (i >= 0) return `${s}${'0'.repeat(i)}.0`
    return `${s.slice(0, len + i)}.${s.slice(len + i)}`
  }
  return `${s[0]}.${len === 1 ? '0' : s.slice(1)}E${e}`
}
