// What makes a context attribute value acceptable, shared by the passthrough parsers and the mapping.

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})$/
// A media type that can travel as an HTTP Content-Type: type/subtype, then parameters, visible ASCII only.
const MEDIA_TYPE = /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*(?:\s*;[\t\x20-\x7e]*)?$/

/** Whether `text` is an RFC 3339 timestamp. */
export function isRfc3339(text: string): boolean {
  return RFC3339.test(text) && !Number.isNaN(Date.parse(text))
}

/** Whether `text` is a media type fit for a Content-Type header. */
export function isMediaType(text: string): boolean {
  return MEDIA_TYPE.test(text)
}

/** Whether `text` is a URI (absolute, with a scheme). */
export function isAbsoluteUri(text: string): boolean {
  return /^[A-Za-z][A-Za-z0-9+.-]*:/.test(text) && URL.canParse(text)
}

/** Whether a media type is JSON (`application/json`, `text/json` or any `+json` suffix). */
export function isJsonMediaType(mediaType: string): boolean {
  const essence = (mediaType.split(';')[0] ?? '').trim().toLowerCase()
  return essence === 'application/json' || essence === 'text/json' || essence.endsWith('+json')
}
