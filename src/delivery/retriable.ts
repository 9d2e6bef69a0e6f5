// Which answers are worth another attempt: Knative's SelectiveRetry. 5xx, 404 (a sink still starting), 408,
// 409 and 429 are retried; any other non-2xx status is final and goes to the dead letter sink at once.

/** What an HTTP status means for a delivery. */
export type StatusVerdict = 'delivered' | 'retry' | 'fail'

export function classifyStatus(status: number): StatusVerdict {
  if (status >= 200 && status < 300) return 'delivered'
  if (status >= 500 || status === 404 || status === 408 || status === 409 || status === 429) return 'retry'
  return 'fail'
}

/** The class a status is counted under in metrics: `2xx` … `5xx`. */
export function statusClass(status: number): '1xx' | '2xx' | '3xx' | '4xx' | '5xx' {
  if (status < 200) return '1xx'
  if (status < 300) return '2xx'
  if (status < 400) return '3xx'
  if (status < 500) return '4xx'
  return '5xx'
}
