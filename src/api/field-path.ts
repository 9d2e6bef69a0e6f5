/** A path into a manifest: object keys and array indexes. */
export type PathSegment = string | number

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/

/** `spec.topics[0]`, `metadata.labels["app.kubernetes.io/name"]`; the empty path is `(root)`. */
export function formatPath(segments: readonly PathSegment[]): string {
  let out = ''
  for (const segment of segments) {
    if (typeof segment === 'number') out += `[${segment}]`
    else if (IDENTIFIER.test(segment)) out += out === '' ? segment : `.${segment}`
    else out += `[${JSON.stringify(segment)}]`
  }
  return out === '' ? '(root)' : out
}
