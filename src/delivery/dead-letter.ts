import type { CloudEvent } from './cloud-event.ts'

// The event a dead letter sink receives: the original, plus Knative's error extensions.

/** Bytes of the sink's response body kept in `knativeerrordata` (before base64), as Knative truncates it. */
export const ERROR_DATA_LIMIT = 1024

/** Why the sink did not take the event. */
export interface DeliveryFailure {
  /** The sink's URL: `knativeerrordest`. */
  readonly destination: string
  /** The sink's last status: `knativeerrorcode`; absent when it never answered (or for a poison record). */
  readonly status?: number
  /** The sink's response body, or a description when there was none: `knativeerrordata`, base64. */
  readonly data?: Buffer
}

/** `event` with `knativeerrordest`, `knativeerrorcode` and `knativeerrordata` set from `failure`. */
export function deadLetterEvent(event: CloudEvent, failure: DeliveryFailure): CloudEvent {
  // Error extensions from an earlier hop (a passthrough event that was dead-lettered before) are replaced.
  const extensions: Record<string, string> = {}
  for (const [name, value] of Object.entries(event.extensions)) {
    if (!ERROR_EXTENSIONS.has(name)) extensions[name] = value
  }
  extensions['knativeerrordest'] = failure.destination
  if (failure.status !== undefined) extensions['knativeerrorcode'] = String(failure.status)
  if (failure.data !== undefined && failure.data.length > 0) {
    extensions['knativeerrordata'] = failure.data.subarray(0, ERROR_DATA_LIMIT).toString('base64')
  }
  return { attributes: event.attributes, extensions, data: event.data }
}

const ERROR_EXTENSIONS = new Set(['knativeerrordest', 'knativeerrorcode', 'knativeerrordata'])
